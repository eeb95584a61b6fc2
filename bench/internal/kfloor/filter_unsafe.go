package main

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// installFilter installs prog on every thread of this process (TSYNC),
// after PR_SET_NO_NEW_PRIVS, which an unprivileged filter needs.
func installFilter(prog []unix.SockFilter) error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return os.NewSyscallError("prctl(PR_SET_NO_NEW_PRIVS)", err)
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
		unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog)))
	if errno != 0 {
		return os.NewSyscallError("seccomp(SECCOMP_SET_MODE_FILTER)", errno)
	}
	return nil
}
