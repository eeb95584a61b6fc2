package bpf

import (
	"testing"

	"golang.org/x/net/bpf"
)

// probeData is the seccomp_data the kernel gives a filter for c: a
// 32-bit ABI's registers are 32 bits wide.
func probeData(c probeCall) seccompData {
	d := seccompData{nr: int32(c.nr), arch: c.abi.audit}
	for i, a := range c.args {
		d.args[i] = uint64(a)
		if c.abi.audit != auditOf64(c.abi) {
			d.args[i] = uint64(uint32(a))
		}
	}
	return d
}

// auditOf64 is the audit arch a 64-bit process's calls carry on abi's
// machine (x32 shares x86_64's).
func auditOf64(abi *abiInfo) uint32 {
	if abi.foreign && abi.name != abiX32 {
		return 0
	}
	return abi.audit
}

// Every probe call is one nettrap's own filter traps (with the exec
// traps and the ptrace engine's guard), and the others are not: a probe
// whose arguments the filter let pass would prove nothing about the calls
// that matter.
func TestProbeCallsAreTrapped(t *testing.T) {
	for _, goarch := range []string{"amd64", "arm64"} {
		tg := targets[goarch]
		prog, err := ProgramWith(goarch, Options{Exec: true, Trace: true})
		if err != nil {
			t.Fatal(err)
		}
		vm, err := bpf.NewVM(prog)
		if err != nil {
			t.Fatal(err)
		}
		covered := map[string]bool{}
		for _, c := range probeCalls(tg) {
			want := uint32(retTrace)
			if c.other {
				want = retAllow
			}
			if got := run(t, vm, probeData(c)); got != want {
				t.Errorf("%s: probe call %s %v: the filter returns %#x, want %#x", goarch, c.name, c.args, got, want)
			}
			covered[c.abi.name+" "+c.kind.String()] = true
		}
		for _, abi := range []*abiInfo{tg.native, tg.compat, tg.x32} {
			if abi == nil {
				continue
			}
			traps := append(append([]trap(nil), abi.traps...), execTraps[abi.name]...)
			for _, tr := range traps {
				if !covered[abi.name+" "+tr.kind.String()] {
					t.Errorf("%s: no probe call for %s %v", goarch, abi.name, tr.kind)
				}
			}
		}
	}
}

// The probe's own filter traces exactly its calls, on their ABI, and
// lets everything else through (the thread's runtime calls).
func TestProbeFilter(t *testing.T) {
	for _, goarch := range []string{"amd64", "arm64"} {
		tg := targets[goarch]
		calls := probeCalls(tg)
		raw, err := probeFilter(tg, calls)
		if err != nil {
			t.Fatal(err)
		}
		insns := make([]bpf.RawInstruction, len(raw))
		for i, r := range raw {
			insns[i] = bpf.RawInstruction{Op: r.Code, Jt: r.Jt, Jf: r.Jf, K: r.K}
		}
		prog, ok := bpf.Disassemble(insns)
		if !ok {
			t.Fatalf("%s: the probe filter does not disassemble", goarch)
		}
		vm, err := bpf.NewVM(prog)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range calls {
			if got := run(t, vm, probeData(c)); got != retTrace {
				t.Errorf("%s: %s: %#x, want TRACE", goarch, c.name, got)
			}
		}
		getpid := map[string]int32{"amd64": 39, "arm64": 172}[goarch]
		for _, d := range []seccompData{
			{nr: getpid, arch: tg.native.audit},
			{nr: 20, arch: tg.compat.audit}, // getpid in both 32-bit ABIs
			{nr: int32(tg.native.nrOf(Connect)), arch: 0x12345678},
		} {
			if got := run(t, vm, d); got != retAllow {
				t.Errorf("%s: %+v: %#x, want ALLOW", goarch, d, got)
			}
		}
	}
}

func TestListenerProbeString(t *testing.T) {
	for _, c := range []struct {
		p    ListenerProbe
		want string
		sees bool
	}{
		{ListenerProbe{Others: []string{"bind", "listen"}}, "it hides none of the calls nettrap traps (it traps bind, listen)", true},
		{ListenerProbe{Hidden: "i386 sendto"}, "it hides i386 sendto, one of the calls nettrap traps", false},
		{ListenerProbe{Unprobed: []string{"arm"}}, "it hides none of the calls nettrap traps; arm calls cannot be probed from here", false},
	} {
		if got := c.p.String(); got != c.want || c.p.Sees() != c.sees {
			t.Errorf("%+v: %q, sees %v; want %q, %v", c.p, got, c.p.Sees(), c.want, c.sees)
		}
	}
}

// The native connect on descriptor -1 comes first (see probeCalls).
func TestProbeCallsConnectFirst(t *testing.T) {
	for _, goarch := range []string{"amd64", "arm64"} {
		tg := targets[goarch]
		c := probeCalls(tg)[0]
		if c.abi != tg.native || c.kind != Connect || c.args[0] != noFD {
			t.Errorf("%s: first probe call %+v, want the native connect on -1", goarch, c)
		}
	}
}
