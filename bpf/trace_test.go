package bpf

import (
	"math/rand"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

func traceVM(t testing.TB, goarch string) *bpf.VM {
	t.Helper()
	prog, err := ProgramWith(goarch, Options{Trace: true})
	if err != nil {
		t.Fatalf("ProgramWith(%q, Trace): %v", goarch, err)
	}
	vm, err := bpf.NewVM(prog)
	if err != nil {
		t.Fatalf("NewVM: %v", err)
	}
	return vm
}

// guardAnswer is what the trace guard answers d in goarch, if anything:
// EBUSY for a seccomp(2) listener, EPERM for clone(2) with
// CLONE_UNTRACED, ENOSYS for clone3(2), in every ABI.
func guardAnswer(goarch string, d seccompData) (uint32, bool) {
	t := targets[goarch]
	nr := uint32(d.nr)
	var abi string
	switch d.arch {
	case t.native.audit:
		abi = t.native.name
		if t.x32 != nil && nr&x32Bit != 0 {
			nr &^= x32Bit
		}
	case t.compat.audit:
		abi = t.compat.name
	default:
		return 0, false
	}
	switch {
	case nr == seccompNrs[abi] && uint32(d.args[0]) == unix.SECCOMP_SET_MODE_FILTER &&
		uint32(d.args[1])&unix.SECCOMP_FILTER_FLAG_NEW_LISTENER != 0:
		return errBusy, true
	case nr == cloneNrs[abi] && uint32(d.args[0])&unix.CLONE_UNTRACED != 0:
		return errPerm, true
	case nr == clone3Nr:
		return errNoSys, true
	}
	return 0, false
}

// TestTraceProgramIsNotifyProgram: on every input the trace program
// answers as the notify program does, with TRACE for USER_NOTIF, except
// what its guard answers (guardAnswer), in every ABI.
func TestTraceProgramIsNotifyProgram(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for _, goarch := range []string{"amd64", "arm64"} {
		notify, trace := vmFor(t, goarch), traceVM(t, goarch)
		tg := targets[goarch]
		arches := []uint32{tg.native.audit, tg.compat.audit, 0x1234}
		var inputs []seccompData
		for _, a := range arches {
			for nr := int32(0); nr < 600; nr++ {
				inputs = append(inputs, seccompData{nr: nr, arch: a, args: [6]uint64{rng.Uint64() & 0xffff, uint64(rng.Intn(16)), rng.Uint64()}})
			}
		}
		for _, abi := range []*abiInfo{tg.native, tg.compat} {
			nr := int32(seccompNrs[abi.name])
			for _, flags := range []uint64{0, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER | 1<<32, 1 << 32, unix.SECCOMP_FILTER_FLAG_TSYNC | unix.SECCOMP_FILTER_FLAG_NEW_LISTENER} {
				for _, op := range []uint64{unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_SET_MODE_STRICT, unix.SECCOMP_SET_MODE_FILTER | 1<<32} {
					inputs = append(inputs, seccompData{nr: nr, arch: abi.audit, args: [6]uint64{op, flags}})
				}
			}
		}
		for _, abi := range []*abiInfo{tg.native, tg.compat} {
			for _, flags := range []uint64{0, unix.CLONE_UNTRACED, unix.CLONE_UNTRACED | unix.CLONE_THREAD, 1 << 40, unix.CLONE_VM} {
				inputs = append(inputs, seccompData{nr: int32(cloneNrs[abi.name]), arch: abi.audit, args: [6]uint64{flags}})
			}
			inputs = append(inputs, seccompData{nr: int32(clone3Nr), arch: abi.audit})
		}
		if tg.x32 != nil {
			inputs = append(inputs,
				seccompData{nr: int32(seccompNrs[abiX8664] | x32Bit), arch: tg.native.audit,
					args: [6]uint64{unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER}},
				seccompData{nr: int32(cloneNrs[abiX8664] | x32Bit), arch: tg.native.audit, args: [6]uint64{unix.CLONE_UNTRACED}},
				seccompData{nr: int32(clone3Nr | x32Bit), arch: tg.native.audit})
		}
		busy := 0
		for _, d := range inputs {
			want := run(t, notify, d)
			if want == retNotify {
				want = retTrace
			}
			if a, ok := guardAnswer(goarch, d); ok {
				want = a
				busy++
			}
			if got := run(t, trace, d); got != want {
				t.Errorf("%s %+v: trace program says %#x, want %#x", goarch, d, got, want)
			}
		}
		if busy < 14 {
			t.Errorf("%s: only %d inputs the guard answers", goarch, busy)
		}
		if got := run(t, trace, seccompData{nr: int32(tg.native.nrOf(Connect)), arch: tg.native.audit}); got != retTrace {
			t.Errorf("%s: native connect gets %#x, want TRACE", goarch, got)
		}
	}
}

// TestTraceProgramAssembled: TraceProgram on the assembled notify program
// (with exec traps) and the Evaluator agree with the VM on the program
// built with Options.Trace.
func TestTraceProgramAssembled(t *testing.T) {
	for _, goarch := range []string{"amd64", "arm64"} {
		notify, err := AssembleWith(goarch, Options{Exec: true})
		if err != nil {
			t.Fatal(err)
		}
		conv, err := TraceProgram(goarch, notify)
		if err != nil {
			t.Fatal(err)
		}
		want, err := AssembleWith(goarch, Options{Exec: true, Trace: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(conv) != len(want) {
			t.Fatalf("%s: converted program has %d instructions, built %d", goarch, len(conv), len(want))
		}
		for i := range want {
			if conv[i] != want[i] {
				t.Fatalf("%s: instruction %d: converted %+v, built %+v", goarch, i, conv[i], want[i])
			}
		}
		ev, err := NewEvaluator(conv)
		if err != nil {
			t.Fatal(err)
		}
		tg := targets[goarch]
		for _, k := range []Kind{Connect, SendMsg, Execve} {
			var nr uint32
			if k == Execve {
				nr = execTraps[tg.native.name][0].nr
			} else {
				nr = tg.native.nrOf(k)
			}
			if got, _ := ev.Eval(tg.native.audit, int32(nr), 0, [6]uint64{}); !Traps(got) {
				t.Errorf("%s: %v evaluates to %#x, want a trap", goarch, k, got)
			}
		}
		if got, _ := ev.Eval(tg.native.audit, int32(seccompNrs[tg.native.name]), 0, [6]uint64{unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER}); got != errBusy {
			t.Errorf("%s: seccomp listener evaluates to %#x, want EBUSY", goarch, got)
		}
		if got, _ := ev.Eval(tg.native.audit, 0, 0, [6]uint64{}); Traps(got) {
			t.Errorf("%s: syscall 0 evaluates to a trap", goarch)
		}
	}
}
