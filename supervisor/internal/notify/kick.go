package notify

import (
	"runtime"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/bpf"
)

// The receivers (receiver.go) block in SECCOMP_IOCTL_NOTIF_RECV, and
// nothing but a notification wakes that call for sure: closing the
// listener does not (the ioctl holds the file), a signal to the thread
// restarts it (6.6+ returns -ERESTARTSYS from the wait, and every Go
// handler has SA_RESTART), and the wake-up the kernel gives when the
// filter's last user is gone (6.6+: RECV then fails with ENOENT) does not
// come while a stray descendant of the command still runs. So to stop
// them the supervisor raises notifications of its own: the thread that
// installed the filter carries it, and once the command is reaped it
// makes a call the filter traps, connect(-1, NULL, 0), once per receiver
// still running; a stopping receiver answers it ENOSYS and ends.

// kickCall is the trapped call: its fd is -1, so should it ever reach the
// kernel it fails with EBADF and touches nothing.
var kickArgs = [6]uint64{^uint64(0), 0, 0}

// Kickable tells whether prog hands the kick call to the supervisor, by
// running it in the bpf package's evaluator (the one the ptrace engine
// asks). Only USER_NOTIF counts: a TRACE answer would stop the thread for
// a tracer, not wake a receiver. Where prog does not notify (a custom
// program), the loop polls before each RECV instead (see loop.serve).
func Kickable(prog []unix.SockFilter) bool {
	var arch uint32
	switch runtime.GOARCH {
	case "amd64":
		arch = unix.AUDIT_ARCH_X86_64
	case "arm64":
		arch = unix.AUDIT_ARCH_AARCH64
	default:
		return false
	}
	ev, err := bpf.NewEvaluator(prog)
	if err != nil {
		return false
	}
	r, err := ev.Eval(arch, unix.SYS_CONNECT, 0, kickArgs)
	return err == nil && r&unix.SECCOMP_RET_ACTION_FULL == unix.SECCOMP_RET_USER_NOTIF
}

// kick wakes the receivers of a stopping loop; it runs on the thread
// that carries the filter. Each trapped call is answered ENOSYS by a
// receiver that then ends (it leaves the count before answering, so the
// count read after the answer is exact). Any other result means the call
// was not trapped after all: the receivers then end when the filter's
// last user is gone. A kick that finds no receiver left (one ended on its
// own in between) is answered by the kernel when the listener is closed.
func (l *Engine) kick() {
	if !l.blocking {
		return
	}
	for l.recv.alive.Load() > 0 {
		_, _, e := unix.Syscall(unix.SYS_CONNECT, uintptr(kickArgs[0]), 0, 0)
		if e != unix.ENOSYS {
			return
		}
	}
}
