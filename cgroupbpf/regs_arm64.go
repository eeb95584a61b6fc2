package cgroupbpf

// The caller's user registers in struct pt_regs (arch/arm64/include/asm/
// ptrace.h: regs[31], sp, pc, pstate), which bpf_task_pt_regs gives: the
// pc, the stack pointer, the frame pointer (x29) and the link register
// (x30).
const (
	ptRegsPC = 256
	ptRegsSP = 248
	ptRegsFP = 232
	ptRegsLR = 240
	ptRegsNr = 280 // syscallno: the system call
)
