package tracee

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// compatRegsSize is an AArch32 tracee's NT_PRSTATUS: r0–r15, cpsr and
// orig_r0, 32 bits each (COMPAT_ELF_NGREG).
const compatRegsSize = 18 * 4

// errCompatRegs: the registers of an AArch32 tracee come in its 32-bit
// layout, which GetRegs and SetRegs do not edit (the hand-over and
// dupSelf make native calls only).
var errCompatRegs = fmt.Errorf("tracee: a 32-bit (AArch32) tracee's registers: %w", unix.EINVAL)

// GetRegs and SetRegs use NT_PRSTATUS (arm64 has no PTRACE_GETREGS), in
// the 64-bit layout only: a 32-bit tracee's registers come in its own
// layout, and GetRegs refuses them.
//
// At a syscall-entry or exit stop (not at a seccomp stop) the kernel
// shows x7 as 0 or 1, entry or exit, and puts the thread's own x7 back
// after the stop whatever the tracer wrote: registers read at one such
// stop and written at another leave x7 as the thread had it.
func GetRegs(tid int, r *unix.PtraceRegs) error {
	n, err := getRegset(tid, r)
	if err != nil {
		return err
	}
	if n != fullRegsSize {
		return errCompatRegs
	}
	return nil
}

func SetRegs(tid int, r *unix.PtraceRegs) error { return setRegset(tid, r, fullRegsSize) }

// SkipSyscall makes the stopped tracee skip its call and return ret: on
// arm64 the syscall number lives in its own register set
// (NT_ARM_SYSTEM_CALL), and x0 (r0 in AArch32) carries the return value.
func SkipSyscall(tid int, ret int64) error {
	if err := setSyscallNr(tid, -1); err != nil {
		return err
	}
	return SetReturn(tid, ret)
}

// SetReturn sets x0, the return value; r0 for an AArch32 tracee, whose
// registers come 32 bits each: r0 the low half of what the 64-bit
// layout calls x0, r1 its high half, left as it was.
func SetReturn(tid int, ret int64) error {
	var r unix.PtraceRegs
	n, err := getRegset(tid, &r)
	if err != nil {
		return err
	}
	switch n {
	case fullRegsSize:
		r.Regs[0] = uint64(ret)
	case compatRegsSize:
		r.Regs[0] = r.Regs[0]&^0xffffffff | uint64(uint32(ret))
	default:
		return fmt.Errorf("tracee: %d bytes of registers, neither layout: %w", n, unix.EINVAL)
	}
	return setRegset(tid, &r, n)
}
