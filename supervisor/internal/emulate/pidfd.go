package emulate

import (
	"errors"

	"github.com/nettrap/nettrap/bpf"
	"github.com/nettrap/nettrap/procfs"
)

// ErrNoHandOver: nettrap cannot take a descriptor for the target and
// install it there (the ptrace engine has no SECCOMP_IOCTL_NOTIF_ADDFD;
// Linux before 5.14 has no ADDFD with SEND).
var ErrNoHandOver = errors.New("pidfd_getfd: nettrap cannot hand the descriptor over")

// EmulablePidfd tells an allowed native pidfd_getfd, which both engines
// must not let the kernel look up again.
func EmulablePidfd(c *Call) bool {
	return c.Syscall.Kind == bpf.PidfdGetfd && !c.Syscall.Foreign
}

// ReapedPidfd tells a native pidfd_getfd through a pidfd whose process
// was reaped (decided as allowed: it can take nothing). Both engines
// answer it ESRCH, the kernel's answer, themselves, with or without
// emulation: letting the kernel run it would look the descriptor number
// up again, where another thread may have put a live process's pidfd.
func ReapedPidfd(c *Call) bool {
	return EmulablePidfd(c) && c.PidfdTarget == procfs.PidfdReaped
}
