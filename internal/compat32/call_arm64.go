package compat32

import "golang.org/x/sys/unix"

// Syscall: an AArch64 process cannot make AArch32 calls; only a 32-bit
// program can (Runs says whether one could run).
func Syscall(uintptr, [6]uintptr) (int32, bool) { return 0, false }

// perLinux32 is PER_LINUX32 (include/uapi/linux/personality.h).
const perLinux32 = 0x0008

// Runs tells whether the kernel runs 32-bit programs: arm64 refuses the
// PER_LINUX32 personality (EINVAL) unless its CPUs run AArch32. The
// calling thread's personality changes with it: call it on a thread that
// exits afterwards. callable is false: see Syscall.
func Runs() (runs, callable bool) {
	_, _, errno := unix.RawSyscall(unix.SYS_PERSONALITY, perLinux32, 0, 0)
	return errno == 0, false
}
