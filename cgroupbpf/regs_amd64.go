package cgroupbpf

// The caller's user registers in struct pt_regs (arch/x86/include/uapi/
// asm/ptrace.h, x86_64), which bpf_task_pt_regs gives: the pc, the stack
// pointer, and the frame pointer (rbp); amd64 has no link register, so
// its slot is read from rbp too and unused.
const (
	ptRegsPC = 128 // ip
	ptRegsSP = 152 // sp
	ptRegsFP = 32  // bp
	ptRegsLR = 32  // none on amd64
	ptRegsNr = 120 // orig_ax: the system call
)
