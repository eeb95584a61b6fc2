package bpf

import (
	"errors"
	"fmt"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/cpu"
	"golang.org/x/sys/unix"
)

// Return values of the program.
const (
	retAllow  = unix.SECCOMP_RET_ALLOW
	retNotify = unix.SECCOMP_RET_USER_NOTIF
	retKill   = unix.SECCOMP_RET_KILL_PROCESS
)

// Offsets in struct seccomp_data {int nr; u32 arch; u64 ip; u64 args[6]}.
const (
	offNr   = 0
	offArch = 4
	offArgs = 16
)

// argLo is the offset of the low 32 bits of 64-bit argument i. Both
// supported targets are little-endian, so the low word comes first.
func argLo(i uint32) uint32 { return offArgs + 8*i }

// Program builds the whole filter for goarch ("amd64" or "arm64").
func Program(goarch string) ([]bpf.Instruction, error) { return ProgramWith(goarch, Options{}) }

// ProgramWith builds the filter for goarch with the options o.
func ProgramWith(goarch string, o Options) ([]bpf.Instruction, error) {
	t, ok := targets[goarch]
	if !ok {
		return nil, fmt.Errorf("bpf: unsupported goarch %q (want amd64 or arm64)", goarch)
	}
	if cpu.IsBigEndian {
		// argLo takes the low word of an argument first, as the
		// little-endian targets lay it out.
		return nil, errors.New("bpf: cannot build a little-endian filter on a big-endian host")
	}
	extra := o.extraTraps(t.native)
	prog, err := notifyProgram(t, withoutUntrapped(argTable(t.native, extra), o), extra, o.untrapped())
	if err != nil {
		return nil, fmt.Errorf("bpf: program for %s: %w", goarch, err)
	}
	if o.Trace {
		if prog, err = traceProgram(t, prog); err != nil {
			return nil, fmt.Errorf("bpf: trace program for %s: %w", goarch, err)
		}
	}
	if len(prog) > unix.BPF_MAXINSNS {
		return nil, fmt.Errorf("bpf: program has %d instructions, the kernel takes %d", len(prog), unix.BPF_MAXINSNS)
	}
	return prog, nil
}

// Assemble builds the program for goarch and encodes it for seccomp(2).
func Assemble(goarch string) ([]unix.SockFilter, error) { return AssembleWith(goarch, Options{}) }

// AssembleWith builds the program for goarch with the options o and
// encodes it for seccomp(2).
func AssembleWith(goarch string, o Options) ([]unix.SockFilter, error) {
	prog, err := ProgramWith(goarch, o)
	if err != nil {
		return nil, err
	}
	return encode(prog)
}

// encode assembles prog for seccomp(2).
func encode(prog []bpf.Instruction) ([]unix.SockFilter, error) {
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return nil, fmt.Errorf("bpf: assemble: %w", err)
	}
	out := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		out[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	return out, nil
}

// withoutUntrapped drops the native ABI's rows of the calls untrapped
// leaves to the kernel, and with o.KernelSends gives sendto its own.
func withoutUntrapped(rules []argRule, o Options) []argRule {
	if !o.KernelSends {
		return rules
	}
	var out []argRule
	for _, r := range rules {
		if r.sys == SendTo.String() || o.untrapped()[kindOf(r.sys)] {
			r.abis &^= nativeABI
		}
		if r.abis != 0 {
			out = append(out, r)
		}
	}
	return append(out, kernelSendtoRule)
}

// kernelSendtoRule: under KernelSends a native sendto goes up only with
// an addrlen of a netlink address (sockaddr_nl, 12 bytes; an inet one is
// 16 at least): a request to the kernel is nettrap's to decide and
// record, as under notify. One with a longer addrlen is not, and meets
// the kernel's refusal on the socket nettrap made without capabilities.
var kernelSendtoRule = argRule{sys: "sendto", abis: nativeABI, ret: retNotify,
	checks: []argCheck{isLo(5, unix.SizeofSockaddrNetlink)}}

// kindOf is the kind of the syscall named name (0 when none is).
func kindOf(name string) Kind {
	for _, k := range []Kind{SendTo, SendMsg, SendMMsg, Connect} {
		if k.String() == name {
			return k
		}
	}
	return 0
}

// notifyProgram emits the layout of doc.go: the arch guard, then for each
// ABI a dispatch on nr that sends each trapped syscall to its block of
// rules (the argument table, rules) or, when it has none there, to the
// supervisor; extra are more native numbers that go up, untrapped native
// calls that do not (they are allowed). The blocks and the returns come
// last.
func notifyProgram(t target, rules []argRule, extra []uint32, untrapped map[Kind]bool) ([]bpf.Instruction, error) {
	a := newAsm()
	native, compat, x32 := a.newLabel(), a.newLabel(), a.newLabel()
	allow, notify := a.retTo(retAllow), a.retTo(retNotify)
	blocks := planRuleBlocks(a, rules)

	a.load(offArch)
	a.jump(bpf.JumpEqual, t.native.audit, native, next)
	a.jump(bpf.JumpEqual, t.compat.audit, compat, next)
	a.ret(retKill)

	used := map[label]bool{}
	a.mark(compat)
	a.load(offNr)
	dispatch(a, t.compat.traps, blocks.foreign, notify, used, nil)
	a.ret(retAllow)

	a.mark(native)
	a.load(offNr)
	if t.x32 != nil {
		// x32 shares AUDIT_ARCH_X86_64, so it must be split off by nr
		// before any native comparison.
		a.jump(bpf.JumpBitsSet, x32Bit, x32, next)
	}
	dispatch(a, t.native.traps, blocks.native, notify, used, untrapped)
	for _, nr := range extra {
		a.jump(bpf.JumpEqual, nr, notify, next)
	}
	a.ret(retAllow)

	if t.x32 != nil {
		a.mark(x32)
		dispatch(a, t.x32.traps, blocks.foreign, notify, used, nil)
		a.ret(retAllow)
	}
	for _, b := range blocks.blocks {
		if !used[b.at] {
			// A misspelt syscall, or one no ABI of the side traps.
			return nil, fmt.Errorf("rules of %s: no trapped syscall of that name to decide", b.sys)
		}
	}

	if err := blocks.emit(a, allow); err != nil {
		return nil, err
	}
	a.placeRets()
	return a.resolve()
}

// dispatch emits, with A = nr, "goto the block of rules" for each trap
// that has one, first (they are the calls the kernel must run the
// filter for: ioctl, setsockopt, …), then "goto notify" for the others.
// It falls through when nr is none of traps, and records the blocks it
// jumps to in used. A trap of a kind in untrapped falls through too.
func dispatch(a *asm, traps []trap, blocks map[string]label, notify label, used map[label]bool, untrapped map[Kind]bool) {
	for _, t := range traps {
		if untrapped[t.kind] {
			continue
		}
		if l, ok := blocks[t.kind.String()]; ok {
			a.jump(bpf.JumpEqual, t.nr, l, next)
			used[l] = true
		}
	}
	for _, t := range traps {
		if _, ok := blocks[t.kind.String()]; !ok && !untrapped[t.kind] {
			a.jump(bpf.JumpEqual, t.nr, notify, next)
		}
	}
}
