package ptrace

import (
	"errors"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/procfs"
	"github.com/nettrap/nettrap/supervisor/internal/decode"
	"github.com/nettrap/nettrap/supervisor/internal/emulate"
)

// Pending implements decode.Holder. A traced caller stays in its stop until
// the tracer resumes it: it waits while it exists.
func (tr *Tracer) Pending(c *decode.Call) bool {
	return procfs.Running(c.TID) // a SIGKILLed one is a zombie at once
}

// AnswerEarly implements decode.Holder. Under the ptrace engine the call is
// skipped, so the kernel's restart code never sees it: ERESTARTSYS would
// reach user space, and EINTR is answered instead.
func (tr *Tracer) AnswerEarly(c *decode.Call, errno unix.Errno) {
	if errno == emulate.ErrRestartSys {
		errno = unix.EINTR
	}
	ret := -int64(errno)
	tr.post(traceAnswer{tid: c.TID, id: c.ID, ret: &ret, early: true})
}

// KeepsTID implements decode.Holder.
func (tr *Tracer) KeepsTID() bool { return true }

// HandIn implements decode.Holder: a tracer has no ADDFD.
func (tr *Tracer) HandIn(c *decode.Call, fd int, newfdFlags uint32) error {
	return errors.ErrUnsupported
}
