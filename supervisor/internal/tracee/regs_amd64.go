package tracee

import "golang.org/x/sys/unix"

// SkipSyscall makes the stopped tracee skip its call and return ret. At a
// seccomp stop or an entry stop the kernel runs nr as orig_rax says, and
// -1 runs nothing, leaving rax as the return value. The 64-bit register
// set serves a 32-bit tracee too (the kernel keeps pt_regs 64-bit).
func SkipSyscall(tid int, ret int64) error {
	var r unix.PtraceRegs
	if err := GetRegs(tid, &r); err != nil {
		return err
	}
	r.Orig_rax = ^uint64(0)
	r.Rax = uint64(ret)
	return SetRegs(tid, &r)
}

// SetReturn sets the return value at a syscall-exit stop.
func SetReturn(tid int, ret int64) error {
	var r unix.PtraceRegs
	if err := GetRegs(tid, &r); err != nil {
		return err
	}
	r.Rax = uint64(ret)
	return SetRegs(tid, &r)
}
