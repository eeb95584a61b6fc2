package tracee

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

const ntARMSystemCall = 0x404 // NT_ARM_SYSTEM_CALL (linux/elf.h)

// setSyscallNr sets the number of the call a stopped arm64 tracee makes.
func setSyscallNr(tid int, nr int32) error {
	iov := unix.Iovec{Base: (*byte)(unsafe.Pointer(&nr)), Len: 4}
	return Ptrace(unix.PTRACE_SETREGSET, tid, ntARMSystemCall, uintptr(unsafe.Pointer(&iov)))
}
