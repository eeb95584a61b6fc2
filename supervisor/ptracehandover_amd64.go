package supervisor

import "golang.org/x/sys/unix"

const handOverSupported = true

// setCall makes r a call of nr with the first three arguments.
func setCall(r *unix.PtraceRegs, nr, a0, a1, a2 uint64) {
	r.Orig_rax, r.Rax = nr, nr
	r.Rdi, r.Rsi, r.Rdx = a0, a1, a2
}

// rewindSyscall puts r back onto the syscall instruction it returned
// from (syscall is two bytes), with rax the number to make.
func rewindSyscall(r *unix.PtraceRegs) {
	r.Rip -= 2
	r.Rax = r.Orig_rax
}

// setResult makes r return v from its call, never to be restarted.
func setResult(r *unix.PtraceRegs, v int64) {
	r.Rax, r.Orig_rax = uint64(v), ^uint64(0)
}
