package supervisor

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// getRegs and setRegs read and write the tracee's registers in the
// tracer's own (64-bit) layout, whatever the tracee's ABI:
// PTRACE_GETREGS does, while x/sys/unix's PtraceGetRegs uses
// PTRACE_GETREGSET, which gives a 32-bit tracee's registers in the 32-bit
// layout (and would write them back in it).
func getRegs(tid int, r *unix.PtraceRegs) error {
	return ptraceRaw(unix.PTRACE_GETREGS, tid, 0, uintptr(unsafe.Pointer(r)))
}

func setRegs(tid int, r *unix.PtraceRegs) error {
	return ptraceRaw(unix.PTRACE_SETREGS, tid, 0, uintptr(unsafe.Pointer(r)))
}
