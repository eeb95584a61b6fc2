package supervisor

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// EmulateMode says whether allowed inet calls are made by the supervisor
// (see emulate.go's emulator) or continued in the kernel.
type EmulateMode int

const (
	// EmulateAuto emulates where pidfd_getfd works, and continues in the
	// kernel elsewhere (saying so once).
	EmulateAuto EmulateMode = iota
	// EmulateOn requires emulation: Start fails where it cannot work, and
	// an allowed call that cannot be emulated is denied (sealed mode).
	EmulateOn
	// EmulateOff always continues in the kernel.
	EmulateOff
)

// ParseEmulateMode reads "auto", "on" or "off".
func ParseEmulateMode(s string) (EmulateMode, error) {
	switch s {
	case "auto", "":
		return EmulateAuto, nil
	case "on":
		return EmulateOn, nil
	case "off":
		return EmulateOff, nil
	}
	return 0, fmt.Errorf("emulate: %q is not auto, on or off", s)
}

// ErrNoEmulation wraps every reason emulation cannot work here.
var ErrNoEmulation = errors.New("emulation of allowed calls unavailable")

// ProbeEmulation tells whether this process may take descriptors from
// other processes with pidfd_getfd. It borrows one of its own: a process
// may always access itself, so what is tested is the kernel (5.6+) and the
// seccomp profile nettrap itself runs under (Docker's default profile
// allows pidfd_getfd only with CAP_SYS_PTRACE).
func ProbeEmulation() error {
	pidfd, err := unix.PidfdOpen(os.Getpid(), 0)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrNoEmulation, os.NewSyscallError("pidfd_open", err))
	}
	defer unix.Close(pidfd)
	fd, err := unix.PidfdGetfd(pidfd, pidfd, 0)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrNoEmulation, os.NewSyscallError("pidfd_getfd", err))
	}
	unix.Close(fd)
	return nil
}
