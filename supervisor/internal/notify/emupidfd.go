package notify

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/procfs"
	"github.com/nettrap/nettrap/supervisor/internal/emulate"
	"github.com/nettrap/nettrap/supervisor/internal/unotify"
)

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
func (l *Engine) pidfdGetfd(c *emulate.Call) bool {
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
		l.answerErrno(c, emulate.ErrnoOf(err))
	}
	return true
}

// answerErrno answers c with an errno of the call's own (the kernel's
// answer to what nettrap made for it), counted as allowed.
func (l *Engine) answerErrno(c *emulate.Call, errno unix.Errno) {
	l.stats.Allowed.Add(1)
	l.send(&unotify.Resp{ID: c.ID, Error: -int32(errno)})
}
