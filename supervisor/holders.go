package supervisor

import (
	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/bpf"
	"github.com/nettrap/nettrap/decision"
	"github.com/nettrap/nettrap/procfs"
	"github.com/nettrap/nettrap/supervisor/internal/unotify"
)

// The engines as holders of a stopped call (decode.Holder), and the
// notify engine's calls.

// newCall is the call of notification n, with the supervisor's Task.
func (l *loop) newCall(n *unotify.Notif) *call {
	c := &call{
		Call: decision.Call{ID: n.ID, TID: int(n.PID),
			Syscall: bpf.Lookup(n.Data.Arch, n.Data.Nr), Args: n.Data.Args},
		holder:    l,
		netns:     l.netns,
		emulating: l.emu != nil,
	}
	c.task.c = c
	c.Task = &c.task
	return c
}

// pending implements holder: the notification is still valid.
func (l *loop) pending(c *call) bool { return unotify.IDValid(l.listener, c.ID) }

// answerEarly implements holder.
func (l *loop) answerEarly(c *call, errno unix.Errno) {
	unotify.Send(l.listener, &unotify.Resp{ID: c.ID, Error: -int32(errno)})
}

// keepsTID implements holder: a notified thread that leaves the call may
// exit and its tid be reused.
func (l *loop) keepsTID() bool { return false }

// pending implements holder. A traced caller stays in its stop until
// the tracer resumes it: it waits while it exists.
func (tr *tracer) pending(c *call) bool {
	return procfs.Running(c.TID) // a SIGKILLed one is a zombie at once
}

// answerEarly implements holder. Under the ptrace engine the call is
// skipped, so the kernel's restart code never sees it: ERESTARTSYS would
// reach user space, and EINTR is answered instead.
func (tr *tracer) answerEarly(c *call, errno unix.Errno) {
	if errno == errRestartSys {
		errno = unix.EINTR
	}
	ret := -int64(errno)
	tr.post(traceAnswer{tid: c.TID, id: c.ID, ret: &ret, early: true})
}

// keepsTID implements holder.
func (tr *tracer) keepsTID() bool { return true }
