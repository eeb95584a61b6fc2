package tracee

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// SyscallInfo is struct ptrace_syscall_info (linux/ptrace.h, 5.3+), as
// PTRACE_GET_SYSCALL_INFO fills it at a seccomp stop or a syscall-entry
// stop: the same arch, nr and arguments a notification carries, whatever
// the tracee's ABI. At an exit stop Nr holds the return value.
type SyscallInfo struct {
	Op      uint8
	_       uint8
	Flags   uint16
	Arch    uint32
	IP      uint64
	SP      uint64
	Nr      uint64
	Args    [6]uint64
	RetData uint32
	_       uint32
}

// Values of SyscallInfo.Op.
const (
	InfoEntry   = 1
	InfoExit    = 2
	InfoSeccomp = 3
)

func GetSyscallInfo(tid int, info *SyscallInfo) error {
	_, _, errno := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_GET_SYSCALL_INFO, uintptr(tid),
		unsafe.Sizeof(*info), uintptr(unsafe.Pointer(info)), 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// Ptrace is ptrace(2) with plain arguments, for the requests x/sys/unix
// wraps without the data they need (PTRACE_SEIZE's options) or not at all
// (PTRACE_LISTEN).
func Ptrace(req, pid int, addr, data uintptr) error {
	_, _, errno := unix.Syscall6(unix.SYS_PTRACE, uintptr(req), uintptr(pid), addr, data, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}
