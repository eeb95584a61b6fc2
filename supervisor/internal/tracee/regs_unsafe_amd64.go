package tracee

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// GetRegs and SetRegs read and write the tracee's registers in the
// tracer's own (64-bit) layout, whatever the tracee's ABI:
// PTRACE_GETREGS does, while x/sys/unix's PtraceGetRegs uses
// PTRACE_GETREGSET, which gives a 32-bit tracee's registers in the 32-bit
// layout (and would write them back in it).
func GetRegs(tid int, r *unix.PtraceRegs) error {
	return Ptrace(unix.PTRACE_GETREGS, tid, 0, uintptr(unsafe.Pointer(r)))
}

func SetRegs(tid int, r *unix.PtraceRegs) error {
	return Ptrace(unix.PTRACE_SETREGS, tid, 0, uintptr(unsafe.Pointer(r)))
}
