package notify

import (
	"os"
	"sync"

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
	c := callPool.Get().(*emulate.Call)
	// The decoded call anew; the borrowed socket beside it is set whole
	// when the call borrows one (emulate.Borrow), and never read before.
	c.Call = decode.Call{Call: decision.Call{ID: n.ID, TID: int(n.PID),
		Syscall: bpf.Lookup(n.Data.Arch, n.Data.Nr), Args: n.Data.Args}}
	c.Bind(l, l.netns, l.emu != nil)
	return c
}

// callPool holds the calls nothing refers to any more (recycle). A call
// is over a kilobyte; allocated afresh for each notification it cost
// about a fifth of a microsecond per trapped call (the allocation, the
// collector, and memory that is never warm in the cache).
var callPool = sync.Pool{New: func() any { return new(emulate.Call) }}

// recycle gives c to a later call. Only for a call whose every holder is
// done with it: the decider said so (Answer.Unkept), and the engine only
// made or continued it (answer), or never asked the decider.
func recycle(c *emulate.Call) { callPool.Put(c) }

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
