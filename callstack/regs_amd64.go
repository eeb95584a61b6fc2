package callstack

import "golang.org/x/sys/unix"

// RegsFromPtrace returns the registers of a thread stopped under
// ptrace (PTRACE_GETREGS): pc, sp and frame pointer (RBP).
func RegsFromPtrace(r *unix.PtraceRegs) Regs {
	return Regs{PC: r.Rip, SP: r.Rsp, FP: r.Rbp}
}
