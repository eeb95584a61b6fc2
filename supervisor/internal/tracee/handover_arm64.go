package tracee

import "golang.org/x/sys/unix"

// SetCall makes r a call of nr with the first three arguments as an svc
// instruction makes it: x8 the number, x0–x2 the arguments. That is
// enough for a thread about to run svc (RewindSyscall); a thread stopped
// in its call needs ReplaceCall.
func SetCall(r *unix.PtraceRegs, nr, a0, a1, a2 uint64) {
	r.Regs[8] = nr
	r.Regs[0], r.Regs[1], r.Regs[2] = a0, a1, a2
}

// ReplaceCall makes the thread stopped in its call (at a seccomp or
// syscall-entry stop), whose registers at this stop are r, make call nr
// with the first three arguments instead. The kernel read x8 at svc
// already: the call it runs after the stop is its syscallno, which only
// NT_ARM_SYSTEM_CALL writes. It passes x0–x5 as the tracer leaves them;
// but the first argument that seccomp's recheck after a TRACE stop (and
// PTRACE_GET_SYSCALL_INFO) sees is still orig_x0, the call's own, which
// no regset writes: nettrap's filter traps neither call made so
// (pidfd_open, fcntl), so no rule reads it. It fails whole, as amd64's
// one write does: the number is put back if the registers cannot be set.
func ReplaceCall(tid int, r *unix.PtraceRegs, nr, a0, a1, a2 uint64) error {
	own := r.Regs[8] // the number svc read
	if err := setSyscallNr(tid, int32(nr)); err != nil {
		return err
	}
	SetCall(r, nr, a0, a1, a2)
	if err := SetRegs(tid, r); err != nil {
		setSyscallNr(tid, int32(own))
		return err
	}
	return nil
}

// RewindSyscall puts r back onto the svc instruction it returned from
// (4 bytes): the thread makes the call x8 names again, with x0–x5. At an
// exit stop x0 is the return value (arm64 has one register for both),
// so the first argument must be in r again: SetCall's, or x0 as read
// before the call ran.
func RewindSyscall(r *unix.PtraceRegs) {
	r.Pc -= 4
}

// SetResult makes r return v from its call. The kernel restarts a call
// after a signal only when x0 is one of the -ERESTART* values, which a
// descriptor (what the hand-over answers) never is.
func SetResult(r *unix.PtraceRegs, v int64) {
	r.Regs[0] = uint64(v)
}
