package tracee

import "golang.org/x/sys/unix"

// GetRegs and SetRegs use NT_PRSTATUS (arm64 has no PTRACE_GETREGS): a
// 32-bit (arm) tracee's registers come in the 32-bit layout, which these
// do not handle; the ptrace engine is exercised on amd64 only.
func GetRegs(tid int, r *unix.PtraceRegs) error { return unix.PtraceGetRegs(tid, r) }

func SetRegs(tid int, r *unix.PtraceRegs) error { return unix.PtraceSetRegs(tid, r) }

// SkipSyscall makes the stopped tracee skip its call and return ret: on
// arm64 the syscall number lives in its own register set
// (NT_ARM_SYSTEM_CALL), and x0 carries the return value.
func SkipSyscall(tid int, ret int64) error {
	if err := setSyscallNr(tid, -1); err != nil {
		return err
	}
	return SetReturn(tid, ret)
}

// SetReturn sets x0, the return value.
func SetReturn(tid int, ret int64) error {
	var r unix.PtraceRegs
	if err := GetRegs(tid, &r); err != nil {
		return err
	}
	r.Regs[0] = uint64(ret)
	return SetRegs(tid, &r)
}
