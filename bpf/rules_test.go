package bpf

import (
	"strings"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// tableEvaluator builds the notify program of goarch around rules (no
// extra traps) and loads it into an Evaluator; n is its length.
func tableEvaluator(t *testing.T, goarch string, rules []argRule) (e *Evaluator, n int) {
	t.Helper()
	prog, err := notifyProgram(targets[goarch], rules, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := bpf.Assemble(prog)
	if err != nil {
		t.Fatal(err)
	}
	filters := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		filters[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	if e, err = NewEvaluator(filters); err != nil {
		t.Fatal(err)
	}
	return e, len(prog)
}

// ruleCall is one call and the action a table must give it.
type ruleCall struct {
	arch uint32
	nr   uint32
	args [6]uint64
	want uint32
}

func TestRuleEmitter(t *testing.T) {
	x86 := unix.AUDIT_ARCH_X86_64
	i386 := uint32(unix.AUDIT_ARCH_I386)
	nat := func(nr uint32, a0, a1 uint64, want uint32) ruleCall {
		return ruleCall{uint32(x86), nr, [6]uint64{a0, a1}, want}
	}
	const sendto, ptrace, socket, ioctl = 44, 101, 41, 16 // x86_64
	arg4 := func(v uint64, want uint32) ruleCall {
		return ruleCall{uint32(x86), sendto, [6]uint64{3, 0x1000, 10, 0, v, 16}, want}
	}
	for _, tc := range []struct {
		name  string
		rules []argRule
		calls []ruleCall
	}{{
		name: "64-bit value whose high half matters",
		rules: []argRule{{sys: "sendto", abis: nativeABI, ret: retNotify,
			checks: []argCheck{{arg: 4, word: full, values: []uint64{5, 1<<32 | 5, 1<<32 | 6, 0xffff_ffff_0000_0000}}}}},
		calls: []ruleCall{
			arg4(5, retNotify), arg4(1<<32|5, retNotify), arg4(1<<32|6, retNotify),
			arg4(0xffff_ffff_0000_0000, retNotify),
			arg4(6, retAllow), arg4(2<<32|5, retAllow), arg4(1<<32, retAllow),
			arg4(0xffff_ffff, retAllow), arg4(0, retAllow),
		},
	}, {
		name: "high word alone",
		rules: []argRule{{sys: "ptrace", abis: nativeABI, ret: retNotify,
			checks: []argCheck{{arg: 0, word: hi, values: []uint64{7}}}}},
		calls: []ruleCall{
			nat(ptrace, 7<<32, 0, retNotify), nat(ptrace, 7<<32|123, 0, retNotify),
			nat(ptrace, 7, 0, retAllow), nat(ptrace, 8<<32, 0, retAllow),
		},
	}, {
		name: "mask, low word only",
		rules: []argRule{{sys: "socket", abis: nativeABI, ret: retNotify,
			checks: []argCheck{{arg: 1, word: lo, mask: 0xf, values: []uint64{unix.SOCK_RAW}}}}},
		calls: []ruleCall{
			nat(socket, 2, unix.SOCK_RAW, retNotify),
			nat(socket, 2, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, retNotify),
			nat(socket, 2, 0x10|unix.SOCK_RAW, retNotify),
			nat(socket, 2, 1<<32|unix.SOCK_RAW, retNotify),
			nat(socket, 2, unix.SOCK_STREAM, retAllow),
			nat(socket, 2, uint64(unix.SOCK_RAW)<<32, retAllow),
		},
	}, {
		name: "empty value list never matches",
		rules: []argRule{
			{sys: "socket", abis: nativeABI, ret: retNotify, checks: []argCheck{{arg: 0, word: lo}}},
			{sys: "socket", abis: nativeABI, ret: retNotify, checks: []argCheck{{arg: 0, word: full}, isLo(1, 1)}},
		},
		calls: []ruleCall{nat(socket, 0, 0, retAllow), nat(socket, 0, 1, retAllow), nat(socket, ^uint64(0), 1, retAllow)},
	}, {
		name: "empty value list, negated, always holds",
		rules: []argRule{{sys: "socket", abis: nativeABI, ret: retNotify,
			checks: []argCheck{{arg: 0, word: lo, not: true}, isLo(1, 1)}}},
		calls: []ruleCall{nat(socket, 0, 1, retNotify), nat(socket, 99, 1, retNotify), nat(socket, 0, 2, retAllow)},
	}, {
		name:  "rule on a foreign ABI only",
		rules: []argRule{{sys: "ptrace", abis: foreignABI, ret: retNotify, checks: []argCheck{isLo(0, 16)}}},
		calls: []ruleCall{
			{i386, 26, [6]uint64{16}, retNotify},
			{i386, 26, [6]uint64{1<<32 | 16}, retNotify},
			{i386, 26, [6]uint64{17}, retAllow},
			{uint32(x86), x32Bit | 521, [6]uint64{16}, retNotify},
			{uint32(x86), x32Bit | 101, [6]uint64{17}, retAllow},
			// The native ptrace has no rows: it is trapped whatever
			// its arguments.
			nat(ptrace, 17, 0, retNotify),
			// A foreign syscall with no rows still goes up.
			{i386, 359, [6]uint64{unix.AF_UNIX}, retNotify},
		},
	}, {
		name: "native and foreign rows differ",
		rules: []argRule{
			{sys: "ptrace", abis: foreignABI, ret: retNotify, checks: []argCheck{isLo(0, 16)}},
			{sys: "ptrace", abis: nativeABI, ret: retNotify, checks: []argCheck{isLo(0, 17)}},
		},
		calls: []ruleCall{
			{i386, 26, [6]uint64{16}, retNotify}, {i386, 26, [6]uint64{17}, retAllow},
			nat(ptrace, 17, 0, retNotify), nat(ptrace, 16, 0, retAllow),
		},
	}, {
		name: "ranges, inclusive, negated",
		rules: []argRule{
			{sys: "ioctl", abis: anyABI, ret: retAllow, checks: []argCheck{{arg: 1, word: lo, ranges: [][2]uint32{{10, 30}}, not: true}}},
			{sys: "ioctl", abis: anyABI, ret: retNotify, checks: []argCheck{{arg: 1, word: lo, values: []uint64{12}, ranges: [][2]uint32{{15, 16}, {20, 20}, {25, 0xffffffff}}}}},
		},
		calls: []ruleCall{
			nat(ioctl, 3, 9, retAllow), nat(ioctl, 3, 10, retAllow), nat(ioctl, 3, 12, retNotify),
			nat(ioctl, 3, 14, retAllow), nat(ioctl, 3, 15, retNotify), nat(ioctl, 3, 16, retNotify),
			nat(ioctl, 3, 17, retAllow), nat(ioctl, 3, 20, retNotify), nat(ioctl, 3, 21, retAllow),
			nat(ioctl, 3, 25, retNotify), nat(ioctl, 3, 30, retNotify), nat(ioctl, 3, 31, retAllow),
			nat(ioctl, 3, 1<<32|15, retNotify), {i386, 54, [6]uint64{3, 20}, retNotify},
		},
	}, {
		name: "bits, and every check of a row",
		rules: []argRule{{sys: "bpf", abis: anyABI, ret: errPerm,
			checks: []argCheck{isLo(0, 5, 6), {arg: 1, word: lo, bits: 0x30}}}},
		calls: []ruleCall{
			nat(321, 5, 0x10, errPerm), nat(321, 6, 0x21, errPerm), nat(321, 5, 0x40, retAllow),
			nat(321, 7, 0x10, retAllow), nat(321, 5, 0x30<<32, retAllow),
		},
	}, {
		name: "first match wins, an unconditional row ends the block",
		rules: []argRule{
			{sys: "socket", abis: nativeABI, ret: retAllow, checks: []argCheck{isLo(0, 1)}},
			{sys: "socket", abis: nativeABI, ret: errPerm, checks: []argCheck{isLo(0, 1, 2)}},
			{sys: "socket", abis: nativeABI, ret: retNotify},
			{sys: "socket", abis: nativeABI, ret: errBusy},
		},
		calls: []ruleCall{nat(socket, 1, 0, retAllow), nat(socket, 2, 0, errPerm), nat(socket, 3, 0, retNotify)},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := tableEvaluator(t, "amd64", tc.rules)
			for _, c := range tc.calls {
				got, err := e.Eval(c.arch, int32(c.nr), 0, c.args)
				if err != nil {
					t.Fatal(err)
				}
				if got != c.want {
					t.Errorf("arch %#x nr %#x args %#x: got %s, want %s", c.arch, c.nr, c.args, retName(got), retName(c.want))
				}
			}
		})
	}
}

// TestRuleNeverMatchingCostsNothing: a row with an empty value list
// emits no instruction.
func TestRuleNeverMatchingCostsNothing(t *testing.T) {
	row := argRule{sys: "socket", abis: nativeABI, ret: retNotify, checks: []argCheck{isLo(0, 1)}}
	_, without := tableEvaluator(t, "amd64", []argRule{row})
	_, with := tableEvaluator(t, "amd64", []argRule{{sys: "socket", abis: nativeABI, ret: retNotify,
		checks: []argCheck{{arg: 1, word: lo}}}, row})
	if with != without {
		t.Errorf("a row that never matches made the program %d instructions long, want %d", with, without)
	}
}

func TestRuleValidation(t *testing.T) {
	for _, tc := range []struct {
		check argCheck
		want  string
	}{
		{argCheck{arg: 6, values: []uint64{1}}, "has 6"},
		{argCheck{arg: 0, word: lo, values: []uint64{1 << 32}}, "does not fit"},
		{argCheck{arg: 0, word: lo, ranges: [][2]uint32{{5, 4}}}, "empty range"},
		{argCheck{arg: 0, word: full, mask: 0xf, values: []uint64{1}}, "values only"},
		{argCheck{arg: 0, word: full, ranges: [][2]uint32{{1, 2}}}, "values only"},
		{argCheck{arg: 0, word: 7, values: []uint64{1}}, "unknown word"},
	} {
		_, err := notifyProgram(targets["amd64"], []argRule{{sys: "socket", abis: nativeABI, ret: retNotify, checks: []argCheck{tc.check}}}, nil, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got error %v, want one with %q", tc.check, err, tc.want)
		}
	}
}

// TestNativePtraceQuirk pins the quirk argTable keeps: a native ptrace
// whose request (or its high half) is one of the native numbers trapped
// unconditionally after ptrace goes up.
func TestNativePtraceQuirk(t *testing.T) {
	for _, tc := range []struct {
		goarch string
		o      Options
		req    uint64
		want   uint32
	}{
		{"amd64", Options{}, 311, retNotify},
		{"amd64", Options{}, 438, retNotify},
		{"amd64", Options{}, 438 << 32, retNotify},
		{"amd64", Options{}, 311<<32 | 5, retNotify},
		{"amd64", Options{}, 59, retAllow},
		{"amd64", Options{Exec: true}, 59, retNotify},
		{"amd64", Options{Exec: true}, 322 << 32, retNotify},
		{"amd64", Options{}, 312, retAllow},
		{"amd64", Options{}, 1<<32 | 311, retAllow},
		{"arm64", Options{}, 271, retNotify},
		{"arm64", Options{Exec: true}, 221, retNotify},
		{"arm64", Options{}, 311, retAllow},
	} {
		raw, err := AssembleWith(tc.goarch, tc.o)
		if err != nil {
			t.Fatal(err)
		}
		e, err := NewEvaluator(raw)
		if err != nil {
			t.Fatal(err)
		}
		n := targets[tc.goarch].native
		got, err := e.Eval(n.audit, int32(n.nrOf(Ptrace)), 0, [6]uint64{tc.req, 1})
		if err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("%s %+v: ptrace(%#x): got %s, want %s", tc.goarch, tc.o, tc.req, retName(got), retName(tc.want))
		}
	}
}

// TestRuleForUntrappedSyscall: a row for a syscall that no dispatch of
// its side sends to it (a misspelling, or the foreign-only socketcall
// given native rows) is an error, not a block nothing reaches.
func TestRuleForUntrappedSyscall(t *testing.T) {
	for _, r := range []argRule{
		{sys: "sockets", abis: nativeABI, ret: retNotify, checks: []argCheck{isLo(0, 1)}},
		{sys: "socketcall", abis: nativeABI, ret: retNotify, checks: []argCheck{isLo(0, 1)}},
	} {
		if _, err := notifyProgram(targets["amd64"], []argRule{r}, nil, nil); err == nil {
			t.Errorf("rows of %s on %d: no error", r.sys, r.abis)
		}
	}
}
