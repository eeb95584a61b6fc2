package bpf

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Features is what the running kernel supports of what nettrap needs.
type Features struct {
	Filter           bool       // seccomp(2) with SECCOMP_SET_MODE_FILTER (3.17+, CONFIG_SECCOMP_FILTER)
	UserNotif        bool       // SECCOMP_RET_USER_NOTIF action (5.0+)
	KillProcess      bool       // SECCOMP_RET_KILL_PROCESS action (4.14+), used for unknown arches
	NewListener      bool       // SECCOMP_FILTER_FLAG_NEW_LISTENER accepted (5.0+)
	WaitKillableRecv bool       // SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV accepted (5.19+)
	NotifSizes       NotifSizes // zero when SECCOMP_GET_NOTIF_SIZES is unavailable
}

// Detect probes the running kernel. It installs nothing: actions are asked
// with SECCOMP_GET_ACTION_AVAIL and filter flags are probed with a NULL
// program (EFAULT = flag known, EINVAL = flag unknown), so it is safe to
// call in any process, including a test binary.
func Detect() Features {
	var f Features
	f.Filter = actionAvail(unix.SECCOMP_RET_ALLOW) == 0
	if !f.Filter {
		return f
	}
	f.UserNotif = actionAvail(unix.SECCOMP_RET_USER_NOTIF) == 0
	f.KillProcess = actionAvail(unix.SECCOMP_RET_KILL_PROCESS) == 0
	f.NewListener = flagKnown(unix.SECCOMP_FILTER_FLAG_NEW_LISTENER)
	f.WaitKillableRecv = f.NewListener &&
		flagKnown(unix.SECCOMP_FILTER_FLAG_NEW_LISTENER|unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV)
	if s, errno := notifSizes(); errno == 0 {
		f.NotifSizes = s
	}
	return f
}

// Check says what is missing for nettrap to run, or nil.
func (f Features) Check() error {
	switch {
	case !f.Filter:
		return errors.New("seccomp filters are unavailable (kernel without CONFIG_SECCOMP_FILTER, or seccomp(2) blocked by a container runtime)")
	case !f.UserNotif || !f.NewListener:
		return errors.New("seccomp user notification is unavailable (needs Linux 5.0 or later)")
	case !f.KillProcess:
		return errors.New("SECCOMP_RET_KILL_PROCESS is unavailable (needs Linux 4.14 or later)")
	}
	return nil
}

func flagKnown(flags uintptr) bool {
	_, errno := seccompSetFilter(flags, nil)
	return errno == unix.EFAULT
}

// Install sets no_new_privs on the calling thread only and installs prog on
// that thread only (no TSYNC), with SECCOMP_FILTER_FLAG_NEW_LISTENER and,
// when the kernel accepts it, SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (5.19+;
// on EINVAL Install retries without it). It returns the listener fd
// (close-on-exec, as the kernel creates it) and whether the killable-recv
// flag took.
//
// The caller must have called runtime.LockOSThread and must let that thread
// die (or exec) afterwards: the filter and no_new_privs stay on the thread.
func Install(prog []unix.SockFilter) (listener int, killableRecv bool, err error) {
	return install(prog, true)
}

// InstallWithoutKillableRecv is Install without trying
// SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV, as a kernel before 5.19 has it:
// a test-only switch, for the benchmarks and tests of what such kernels
// pay (supervisor's NETTRAP_TEST_NO_KILLABLE_RECV).
func InstallWithoutKillableRecv(prog []unix.SockFilter) (listener int, killableRecv bool, err error) {
	return install(prog, false)
}

func install(prog []unix.SockFilter, tryKillable bool) (listener int, killableRecv bool, err error) {
	if len(prog) == 0 || len(prog) > unix.BPF_MAXINSNS {
		return -1, false, fmt.Errorf("bpf: install: program has %d instructions (want 1..%d)", len(prog), unix.BPF_MAXINSNS)
	}
	// prctl acts on the calling task, i.e. this thread only.
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return -1, false, fmt.Errorf("bpf: set no_new_privs: %w", os.NewSyscallError("prctl", err))
	}
	if tryKillable {
		fd, errno := seccompSetFilter(unix.SECCOMP_FILTER_FLAG_NEW_LISTENER|unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV, prog)
		if errno == 0 {
			return int(fd), true, nil
		}
		if errno != unix.EINVAL {
			return -1, false, fmt.Errorf("bpf: install filter: %w", os.NewSyscallError("seccomp", errno))
		}
	}
	// Before 5.19 the kernel rejects the unknown flag as a whole.
	fd, errno := seccompSetFilter(unix.SECCOMP_FILTER_FLAG_NEW_LISTENER, prog)
	if errno != 0 {
		return -1, false, fmt.Errorf("bpf: install filter: %w", os.NewSyscallError("seccomp", errno))
	}
	return int(fd), false, nil
}
