package tracee

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

const (
	ntPRStatus      = 1     // NT_PRSTATUS (linux/elf.h)
	ntARMSystemCall = 0x404 // NT_ARM_SYSTEM_CALL (linux/elf.h)
)

// fullRegsSize is the 64-bit layout's size (user_pt_regs), which the
// kernel fills for an AArch64 tracee.
const fullRegsSize = int(unsafe.Sizeof(unix.PtraceRegs{}))

// regset reads (req PTRACE_GETREGSET) or writes (PTRACE_SETREGSET) the
// first n bytes of regset typ of tid at p, and returns how many bytes the
// kernel took: fewer than n where the tracee's layout is shorter (an
// AArch32 tracee's NT_PRSTATUS).
func regset(req, tid, typ int, p unsafe.Pointer, n int) (int, error) {
	iov := unix.Iovec{Base: (*byte)(p)}
	iov.SetLen(n)
	_, _, errno := unix.Syscall6(unix.SYS_PTRACE, uintptr(req), uintptr(tid), uintptr(typ),
		uintptr(unsafe.Pointer(&iov)), 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(iov.Len), nil
}

// getRegset reads tid's NT_PRSTATUS into r: n is fullRegsSize for an
// AArch64 tracee, compatRegsSize for an AArch32 one.
func getRegset(tid int, r *unix.PtraceRegs) (n int, err error) {
	return regset(unix.PTRACE_GETREGSET, tid, ntPRStatus, unsafe.Pointer(r), fullRegsSize)
}

// setRegset writes the first n bytes of r (as getRegset read them) to
// tid's NT_PRSTATUS.
func setRegset(tid int, r *unix.PtraceRegs, n int) error {
	_, err := regset(unix.PTRACE_SETREGSET, tid, ntPRStatus, unsafe.Pointer(r), n)
	return err
}

// setSyscallNr sets the number of the call a stopped arm64 tracee makes
// (its pt_regs' syscallno, which no other regset writes).
func setSyscallNr(tid int, nr int32) error {
	_, err := regset(unix.PTRACE_SETREGSET, tid, ntARMSystemCall, unsafe.Pointer(&nr), 4)
	return err
}
