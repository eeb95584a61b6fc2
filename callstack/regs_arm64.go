package callstack

import "golang.org/x/sys/unix"

// RegsFromPtrace returns the registers of a thread stopped under
// ptrace (PTRACE_GETREGSET, NT_PRSTATUS): pc, sp, frame pointer (X29)
// and link register (X30).
func RegsFromPtrace(r *unix.PtraceRegs) Regs {
	return Regs{PC: r.Pc, SP: r.Sp, FP: r.Regs[29], LR: r.Regs[30]}
}
