package bpf

import (
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// This file holds every use of unsafe in the package: the two seccomp(2)
// operations that take a pointer.

// seccompSetFilter calls seccomp(SECCOMP_SET_MODE_FILTER, flags, &fprog)
// and returns its result (the listener fd with NEW_LISTENER). A nil prog
// passes a NULL pointer, which Detect uses to probe flags: the kernel
// validates flags before it reads the program, so it answers EINVAL for an
// unknown flag and EFAULT for a known one, without installing anything.
func seccompSetFilter(flags uintptr, prog []unix.SockFilter) (uintptr, unix.Errno) {
	var ptr unsafe.Pointer
	var fprog unix.SockFprog
	if prog != nil {
		fprog = unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
		ptr = unsafe.Pointer(&fprog)
	}
	r, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags, uintptr(ptr))
	runtime.KeepAlive(prog)
	runtime.KeepAlive(&fprog)
	return r, errno
}

// NotifSizes is struct seccomp_notif_sizes: the sizes the running kernel
// uses for seccomp_notif, seccomp_notif_resp and seccomp_data.
type NotifSizes struct {
	Notif     uint16
	NotifResp uint16
	Data      uint16
}

// notifSizes calls seccomp(SECCOMP_GET_NOTIF_SIZES, 0, &sizes).
func notifSizes() (NotifSizes, unix.Errno) {
	var s NotifSizes
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_GET_NOTIF_SIZES, 0, uintptr(unsafe.Pointer(&s)))
	return s, errno
}

// actionAvail calls seccomp(SECCOMP_GET_ACTION_AVAIL, 0, &action).
func actionAvail(action uint32) unix.Errno {
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_GET_ACTION_AVAIL, 0, uintptr(unsafe.Pointer(&action)))
	return errno
}

// probeLoopback is a sockaddr_in for 127.0.0.1:9, the address of the
// probe's first connect (hiddencalls.go): a package variable, so its
// address never moves.
var probeLoopback = [16]byte{unix.AF_INET, 0, 0, 9, 127, 0, 0, 1}

// probeLoopbackPtr is probeLoopback's address, for a raw syscall.
func probeLoopbackPtr() uintptr { return uintptr(unsafe.Pointer(&probeLoopback)) }
