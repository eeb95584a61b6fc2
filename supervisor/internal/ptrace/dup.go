package ptrace

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/supervisor/internal/emulate"
	"github.com/nettrap/nettrap/supervisor/internal/tracee"
)

// dupSelf turns an allowed pidfd_getfd(own pidfd, fd, 0) of the stopped
// thread into what it amounts to, fcntl(fd, F_DUPFD_CLOEXEC, 0): every
// argument a register, so no descriptor is looked up again. (The ptrace
// engine has no ADDFD to hand over a descriptor it took itself, and the
// target may not take one from nettrap, which is not dumpable.) A
// pidfd_getfd aimed at a descendant goes through emulator.cannot
// instead. It returns false when the thread is gone or killed.
func (tr *Tracer) dupSelf(c *emulate.Call) bool {
	var r unix.PtraceRegs
	err := tracee.GetRegs(c.TID, &r)
	if err == nil {
		err = tracee.ReplaceCall(c.TID, &r, unix.SYS_FCNTL, c.Args[1], unix.F_DUPFD_CLOEXEC, 0)
	}
	if err != nil {
		if !errors.Is(err, unix.ESRCH) {
			tr.report(fmt.Errorf("answer pidfd_getfd of tracee %d: %w; killing it", c.TID, err))
			unix.Kill(c.TID, unix.SIGKILL)
		}
		return false
	}
	tr.stats.Emulated.Add(1)
	return true
}
