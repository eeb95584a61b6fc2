package bpf

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// Evaluator runs an assembled seccomp program in user space, on the
// values a ptrace syscall-entry stop reports: the ptrace engine asks it,
// at each entry stop, whether the filter traps the call (see the
// supervisor's ptrace.go). Not safe for concurrent use.
type Evaluator struct {
	vm  *bpf.VM
	buf [64]byte
}

// NewEvaluator loads prog.
func NewEvaluator(prog []unix.SockFilter) (*Evaluator, error) {
	raw := make([]bpf.RawInstruction, len(prog))
	for i, f := range prog {
		raw[i] = bpf.RawInstruction{Op: f.Code, Jt: f.Jt, Jf: f.Jf, K: f.K}
	}
	insns, ok := bpf.Disassemble(raw)
	if !ok {
		return nil, fmt.Errorf("bpf: evaluator: the program has instructions the VM cannot run")
	}
	vm, err := bpf.NewVM(insns)
	if err != nil {
		return nil, fmt.Errorf("bpf: evaluator: %w", err)
	}
	return &Evaluator{vm: vm}, nil
}

// Eval returns the program's action for the call: SECCOMP_RET_TRACE
// (or USER_NOTIF) when it traps it.
func (e *Evaluator) Eval(arch uint32, nr int32, ip uint64, args [6]uint64) (uint32, error) {
	encodeSeccompData(e.buf[:], nr, arch, ip, args)
	r, err := e.vm.Run(e.buf[:])
	if err != nil {
		return 0, fmt.Errorf("bpf: evaluator: %w", err)
	}
	return uint32(r), nil
}

// Traps tells whether action sends the call to the supervisor.
func Traps(action uint32) bool {
	a := action & unix.SECCOMP_RET_ACTION_FULL
	return a == retTrace || a == retNotify
}

// encodeSeccompData lays out struct seccomp_data for x/net/bpf's VM. The
// kernel loads 32-bit words of seccomp_data in native (here:
// little-endian) order, so the low half of a u64 sits at the lower
// offset; the VM decodes every word as big-endian. So the words are laid
// out as the kernel sees them, each written big-endian: the VM then reads
// exactly the values the kernel would.
func encodeSeccompData(b []byte, nr int32, arch uint32, ip uint64, args [6]uint64) {
	be := binary.BigEndian
	be.PutUint32(b[0:], uint32(nr))
	be.PutUint32(b[4:], arch)
	put64 := func(off int, v uint64) {
		be.PutUint32(b[off:], uint32(v))
		be.PutUint32(b[off+4:], uint32(v>>32))
	}
	put64(8, ip)
	for i, a := range args {
		put64(16+8*i, a)
	}
}

// TraceProgram turns an assembled notify program for this machine's
// architecture into the ptrace engine's, as Options.Trace would have
// built it: for a program made by a caller (with Options.Exec, say).
func TraceProgram(goarch string, prog []unix.SockFilter) ([]unix.SockFilter, error) {
	t, ok := targets[goarch]
	if !ok {
		return nil, fmt.Errorf("bpf: unsupported goarch %q (want amd64 or arm64)", goarch)
	}
	guard, err := traceGuard(t)
	if err != nil {
		return nil, err
	}
	raw, err := bpf.Assemble(guard)
	if err != nil {
		return nil, fmt.Errorf("bpf: assemble: %w", err)
	}
	out := make([]unix.SockFilter, 0, len(raw)+len(prog))
	for _, r := range raw {
		out = append(out, unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K})
	}
	for _, f := range prog {
		if f.Code == unix.BPF_RET|unix.BPF_K && f.K == retNotify {
			f.K = retTrace
		}
		out = append(out, f)
	}
	if len(out) > unix.BPF_MAXINSNS {
		return nil, fmt.Errorf("bpf: program has %d instructions, the kernel takes %d", len(out), unix.BPF_MAXINSNS)
	}
	return out, nil
}

// ActionAvailable tells whether the kernel knows the seccomp action.
func ActionAvailable(action uint32) bool { return actionAvail(action) == 0 }
