package notify

import (
	"os"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/bpf"
	"github.com/nettrap/nettrap/decision"
	"github.com/nettrap/nettrap/supervisor/internal/decode"
	"github.com/nettrap/nettrap/supervisor/internal/emulate"
	"github.com/nettrap/nettrap/supervisor/internal/unotify"
)

// The engines as holders of a stopped call (decode.Holder), and the
// notify engine's calls.

// newCall is the call of notification n, with the supervisor's Task.
func (l *Engine) newCall(n *unotify.Notif) *emulate.Call {
	c := &emulate.Call{Call: decode.Call{Call: decision.Call{ID: n.ID, TID: int(n.PID),
		Syscall: bpf.Lookup(n.Data.Arch, n.Data.Nr), Args: n.Data.Args}}}
	c.Bind(l, l.netns, l.emu != nil)
	return c
}

// Pending implements decode.Holder: the notification is still valid.
func (l *Engine) Pending(c *decode.Call) bool { return unotify.IDValid(l.listener, c.ID) }

// AnswerEarly implements decode.Holder.
func (l *Engine) AnswerEarly(c *decode.Call, errno unix.Errno) {
	unotify.Send(l.listener, &unotify.Resp{ID: c.ID, Error: -int32(errno)})
}

// KeepsTID implements decode.Holder: a notified thread that leaves the call may
// exit and its tid be reused.
func (l *Engine) KeepsTID() bool { return false }

// HandIn implements decode.Holder. Without SEND the target's call is not
// answered by it: the caller answers (the connect's own result).
func (l *Engine) HandIn(c *decode.Call, fd int, newfdFlags uint32) error {
	a := unotify.Addfd{ID: c.ID, Flags: unix.SECCOMP_ADDFD_FLAG_SETFD, Srcfd: uint32(fd),
		Newfd: uint32(int32(c.Args[0])), NewfdFlags: newfdFlags}
	_, err := unotify.AddFD(l.listener, &a)
	if err != nil {
		return os.NewSyscallError("ioctl(SECCOMP_IOCTL_NOTIF_ADDFD)", err)
	}
	return nil
}
