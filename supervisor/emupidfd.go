package supervisor

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/bpf"
	"github.com/nettrap/nettrap/procfs"
	"github.com/nettrap/nettrap/supervisor/internal/emulate"
	"github.com/nettrap/nettrap/supervisor/internal/tracee"
	"github.com/nettrap/nettrap/supervisor/internal/unotify"
)

// errNoHandOver: nettrap cannot take a descriptor for the target and
// install it there (the ptrace engine has no SECCOMP_IOCTL_NOTIF_ADDFD;
// Linux before 5.14 has no ADDFD with SEND).
var errNoHandOver = errors.New("pidfd_getfd: nettrap cannot hand the descriptor over")

// pidfdGetfd makes an allowed pidfd_getfd itself and answers it: the
// decision read the process a pidfd names from the target's descriptor
// table (/proc/TID/fdinfo), and the kernel would look the descriptor up
// again, where a second thread may have put a pidfd of an unconfined
// process (pidfd_open needs no permission; pidfd_getfd asks only for
// ptrace access, which a same-user process has without Yama). So
// nettrap borrows the pidfd, checks that its copy names the process the
// decision allowed, takes the descriptor with it and installs the result
// in the target (ADDFD with SEND: the call returns the new descriptor,
// close-on-exec as pidfd_getfd's own). It returns false, without
// answering, where it cannot: the caller answers then.
func (l *loop) pidfdGetfd(c *emulate.Call) bool {
	s, err := emulate.Borrow(c, l.emu)
	switch {
	case errors.Is(err, emulate.ErrGone):
		l.stats.Vanished.Add(1)
		return true
	case errors.Is(err, unix.EBADF):
		l.answerErrno(c, unix.EBADF)
		return true
	case err != nil:
		return false
	}
	defer s.Close()
	if procfs.PidfdTarget(os.Getpid(), s.FD) != c.PidfdTarget || c.PidfdTarget == 0 {
		// Swapped since the decision (or no pidfd): what the kernel
		// would take now was never checked.
		l.answerErrno(c, unix.EPERM)
		return true
	}
	fd, _, errno := unix.Syscall(unix.SYS_PIDFD_GETFD, uintptr(s.FD), uintptr(int32(c.Args[1])), uintptr(c.Args[2]))
	if errno != 0 {
		l.stats.Emulated.Add(1)
		l.answerErrno(c, errno)
		return true
	}
	defer unix.Close(int(fd))
	a := unotify.Addfd{ID: c.ID, Flags: unix.SECCOMP_ADDFD_FLAG_SEND, Srcfd: uint32(fd), NewfdFlags: unix.O_CLOEXEC}
	_, err = unotify.AddFD(l.listener, &a)
	switch {
	case err == nil:
		l.stats.Allowed.Add(1)
		l.stats.Emulated.Add(1)
	case errors.Is(err, unix.ENOENT):
		l.stats.Vanished.Add(1)
	case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOTTY):
		return false // before 5.14: no SEND
	default:
		l.answerErrno(c, errnoOf(err))
	}
	return true
}

// answerErrno answers c with an errno of the call's own (the kernel's
// answer to what nettrap made for it), counted as allowed.
func (l *loop) answerErrno(c *emulate.Call, errno unix.Errno) {
	l.stats.Allowed.Add(1)
	l.send(&unotify.Resp{ID: c.ID, Error: -int32(errno)})
}

// emulablePidfd tells an allowed native pidfd_getfd, which both engines
// must not let the kernel look up again.
func emulablePidfd(c *emulate.Call) bool {
	return c.Syscall.Kind == bpf.PidfdGetfd && !c.Syscall.Foreign
}

// dupSelf turns an allowed pidfd_getfd(own pidfd, fd, 0) of the stopped
// thread into what it amounts to, fcntl(fd, F_DUPFD_CLOEXEC, 0): every
// argument a register, so no descriptor is looked up again. (The ptrace
// engine has no ADDFD to hand over a descriptor it took itself, and the
// target may not take one from nettrap, which is not dumpable.) A
// pidfd_getfd aimed at a descendant goes through emulator.cannot
// instead. It returns false when the thread is gone or killed.
func (tr *tracer) dupSelf(c *emulate.Call) bool {
	var r unix.PtraceRegs
	err := tracee.GetRegs(c.TID, &r)
	if err == nil {
		tracee.SetCall(&r, unix.SYS_FCNTL, c.Args[1], unix.F_DUPFD_CLOEXEC, 0)
		err = tracee.SetRegs(c.TID, &r)
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
