package notify

import (
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
