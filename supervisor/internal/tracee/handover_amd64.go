package tracee

import "golang.org/x/sys/unix"

const HandOverSupported = true

// SetCall makes r a call of nr with the first three arguments.
func SetCall(r *unix.PtraceRegs, nr, a0, a1, a2 uint64) {
	r.Orig_rax, r.Rax = nr, nr
	r.Rdi, r.Rsi, r.Rdx = a0, a1, a2
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
