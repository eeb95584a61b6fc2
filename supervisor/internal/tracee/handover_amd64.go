package tracee

import "golang.org/x/sys/unix"

// SetCall makes r a call of nr with the first three arguments.
func SetCall(r *unix.PtraceRegs, nr, a0, a1, a2 uint64) {
	r.Orig_rax, r.Rax = nr, nr
	r.Rdi, r.Rsi, r.Rdx = a0, a1, a2
}

// ReplaceCall makes the thread stopped in its call (at a seccomp or
// syscall-entry stop), whose registers at this stop are r, make call nr
// with the first three arguments instead: orig_rax is the call the
// kernel runs after the stop.
func ReplaceCall(tid int, r *unix.PtraceRegs, nr, a0, a1, a2 uint64) error {
	SetCall(r, nr, a0, a1, a2)
	return SetRegs(tid, r)
}

// RewindSyscall puts r back onto the syscall instruction it returned
// from (syscall is two bytes), with rax the number to make.
func RewindSyscall(r *unix.PtraceRegs) {
	r.Rip -= 2
	r.Rax = r.Orig_rax
}

// SetResult makes r return v from its call, never to be restarted.
func SetResult(r *unix.PtraceRegs, v int64) {
	r.Rax, r.Orig_rax = uint64(v), ^uint64(0)
}
