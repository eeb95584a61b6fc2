package tracee

import "golang.org/x/sys/unix"

// HandOverSupported: the hand-over rewrites amd64 registers only; on
// arm64 a netlink socket keeps its creator's capabilities under the
// ptrace engine.
const HandOverSupported = false

func SetCall(r *unix.PtraceRegs, nr, a0, a1, a2 uint64) {}
func RewindSyscall(r *unix.PtraceRegs)                  {}
func SetResult(r *unix.PtraceRegs, v int64)             {}
