package supervisor_test

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/nettrap/nettrap/bpf"
	"github.com/nettrap/nettrap/internal/compat32"
	"github.com/nettrap/nettrap/landlock"
	"github.com/nettrap/nettrap/supervisor"
)

// underPtrace tells whether the supervisor role runs the ptrace engine:
// asked for (NETTRAP_SUPERVISOR_TEST_ENGINE=ptrace), or auto in a test
// binary confined by nettrap, whose listener holds the filter chain's
// only one, so that auto falls back (an outer nettrap under its own
// ptrace engine would leave the role no engine at all: one tracer).
func underPtrace() bool {
	e := os.Getenv(engineEnv)
	return e == "ptrace" || (e == "" || e == "auto") && underNettrap()
}

// skipParentListenerUnderNettrap skips a case that installs a listener
// above the supervisor (parentListenerEnv) when this test binary is
// confined by nettrap: the chain's one listener is that nettrap's, so
// the role's own gets EBUSY. The case without one runs there under that
// nettrap's listener, which traps connect, sendto and sendmsg.
func skipParentListenerUnderNettrap(t *testing.T, parent string) {
	t.Helper()
	if parent != "" {
		skipUnderNettrap(t, "the case installs a seccomp listener above the supervisor, and the filter chain's only one is the enclosing nettrap's (EBUSY)")
	}
}

// confinedWith is confined with env added to the supervisor role's.
func confinedWith(t *testing.T, env []string, op ...string) ([]string, roleReport) {
	t.Helper()
	cmd, report := supervisorCmd(t, op...)
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("supervisor role: %v\n%s", err, out)
	}
	return strings.Fields(string(out)), readReport(t, report)
}

// skipUnderPtrace skips a test of what only the notify engine does; why
// says what.
func skipUnderPtrace(t *testing.T, why string) {
	t.Helper()
	if underPtrace() {
		t.Skipf("the ptrace engine %s", why)
	}
}

// Under a listener above the supervisor, auto falls back to the ptrace
// engine, and denials hold even where the listener above traps the very
// calls nettrap must decide (its USER_NOTIF outranks TRACE, so a seccomp
// stop alone would never come). The engine's probe tells the two apart:
// a listener that hides none of nettrap's calls (WSL2's bind and listen)
// leaves the seccomp stops enough; one that hides connect, sendto and
// sendmsg, or --sealed, takes every syscall's entry stop. So does any
// listener on an arm64 machine that runs AArch32 programs: the probe
// cannot make their calls (armUnprobed), so the listener may hide them.
func TestPtraceUnderParentListener(t *testing.T) {
	unprobed := armUnprobed()
	for _, c := range []struct {
		traps      string
		sealed     bool
		entryStops bool
		hidden     string
		others     []string
	}{
		{"bind,listen", false, unprobed != nil, "", []string{"bind", "listen"}},
		{"bind,listen", true, true, "", []string{"bind", "listen"}},
		{"connect,sendto,sendmsg", false, true, "connect", nil},
		// A listener that hides the i386 ABI's connect alone: a 64-bit
		// process reaches it with `int $0x80`.
		{"i386:connect", false, i386Hidden() != "" || unprobed != nil, i386Hidden(), nil},
	} {
		t.Run(fmt.Sprintf("%s/sealed=%v", c.traps, c.sealed), func(t *testing.T) {
			skipParentListenerUnderNettrap(t, c.traps)
			ok, denied := listen(t, "127.0.0.1"), listen(t, "127.0.0.2")
			env := []string{parentListenerEnv + "=" + c.traps, engineEnv + "=auto"}
			if c.sealed {
				env = append(env, sealedEnv+"=1")
			}
			run := func(op ...string) ([]string, roleReport) { return confinedWith(t, env, op...) }
			out, rep := run("exec", "connect", ok.addr)
			expect(t, out, "ok")
			if rep.Engine != "ptrace" {
				t.Fatalf("engine %q under a parent listener, want ptrace", rep.Engine)
			}
			forced := os.Getenv("NETTRAP_TEST_ENTRY_STOPS") != ""
			if rep.EntryStops != (c.entryStops || forced) || rep.Hidden != c.hidden || !slices.Equal(rep.Others, c.others) ||
				!slices.Equal(rep.Unprobed, unprobed) {
				t.Errorf("entry stops %v, probe saw hidden %q, others %q, unprobed %q; want %v, %q, %q, %q",
					rep.EntryStops, rep.Hidden, rep.Others, rep.Unprobed, c.entryStops, c.hidden, c.others, unprobed)
			}
			out, rep = run("connect", denied.addr)
			expect(t, out, "EPERM")
			if runtime.GOARCH == "amd64" {
				out, _ = run("i386-connect", denied.addr)
				if runs, _ := compat32.Runs(); runs {
					expect(t, out, "EPERM")
				} else {
					expect(t, out, "error:no-i386") // a kernel without IA32 emulation: no such call exists
				}
			}
			out, _ = run("sendmmsg", denied.addr, ok.addr)
			expect(t, out, "EPERM")
			if rep.Denied != 1 {
				t.Errorf("report %+v, want one denial", rep)
			}
			if c, _ := ok.counts(t, 1, 0); c != 1 {
				t.Errorf("allowed listener saw %d connections, want 1", c)
			}
			if c, g := denied.counts(t, 0, 0); c != 0 || g != 0 {
				t.Errorf("denied listener saw %d connections and %d datagrams: the guard leaked", c, g)
			}
		})
	}
}

// The ptrace engine probes whatever made it the choice. Asked for with
// no listener above, it sees every call and needs only the seccomp
// stops, on an arm64 machine that runs AArch32 programs too (the probe
// cannot make their calls, but with no listener above nothing can hide
// one); confined by another nettrap, whose listener traps connect, the
// probe stops at its first call, hidden, and the engine takes the entry
// stops.
func TestPtraceProbe(t *testing.T) {
	ok := listen(t, "127.0.0.1")
	out, rep := confinedWith(t, []string{engineEnv + "=ptrace"}, "connect", ok.addr)
	expect(t, out, "ok")
	wantStops, wantHidden, unprobed := false, "", armUnprobed()
	// A listener above for every test (the variants of .ci/run) hides
	// connect, the probe's first call, or none of nettrap's calls.
	parent := os.Getenv(parentListenerEnv)
	if underNettrap() || slices.Contains(strings.Split(parent, ","), "connect") {
		wantStops, wantHidden = true, "connect"
	} else if parent == "bind,listen" {
		wantStops = unprobed != nil // a listener above may hide AArch32 calls
	} else if parent != "" {
		t.Skipf("%s=%s: the probe's verdict is not this test's to predict", parentListenerEnv, parent)
	}
	if os.Getenv("NETTRAP_TEST_ENTRY_STOPS") != "" {
		wantStops = true
	}
	if rep.Engine != "ptrace" || rep.EntryStops != wantStops || rep.Hidden != wantHidden || !slices.Equal(rep.Unprobed, unprobed) {
		t.Errorf("engine %s, entry stops %v, hidden %q, unprobed %q; want ptrace, %v, %q, %q",
			rep.Engine, rep.EntryStops, rep.Hidden, rep.Unprobed, wantStops, wantHidden, unprobed)
	}
}

// armUnprobed is what the probe says it cannot make calls of: "arm" on
// an arm64 machine whose kernel runs AArch32 programs (compat32.Runs),
// nothing elsewhere (amd64 makes its i386 calls itself).
func armUnprobed() []string {
	if runtime.GOARCH != "arm64" {
		return nil
	}
	runs := make(chan bool)
	go func() {
		// No UnlockOSThread: Runs changes the thread's personality, and
		// the thread must exit with it.
		runtime.LockOSThread()
		r, _ := compat32.Runs()
		runs <- r
	}()
	if <-runs {
		return []string{"arm"}
	}
	return nil
}

// i386Hidden is what the probe says of a listener that hides the i386
// connect: only amd64 makes i386 calls.
func i386Hidden() string {
	if runtime.GOARCH != "amd64" {
		return "" // arm64: no AArch32 call can be made from here (armUnprobed)
	}
	if runs, _ := compat32.Runs(); runs {
		return "i386 connect"
	}
	return "" // no i386 ABI here (arm64, or amd64 without IA32 emulation): nothing to hide
}

// A decider that cannot say which calls are quick is asked aside, on
// another goroutine, by the ptrace engine: the answers come back through
// the waker, with the tracer serving other stops meanwhile.
func TestPtraceDecidesAside(t *testing.T) {
	ok, denied := listen(t, "127.0.0.1"), listen(t, "127.0.0.2")
	run := func(op ...string) ([]string, roleReport) {
		return confinedWith(t, []string{engineEnv + "=ptrace", asideEnv + "=1"}, op...)
	}
	out, rep := run("many-connect", "50", ok.addr)
	expect(t, out, "ok:50")
	if rep.Engine != "ptrace" || rep.Allowed < 50 {
		t.Errorf("report %+v, want the ptrace engine and 50 allowed", rep)
	}
	out, rep = run("connect", denied.addr)
	expect(t, out, "EPERM")
	if c, _ := denied.counts(t, 0, 0); c != 0 {
		t.Errorf("denied listener saw %d connections: the guard leaked", c)
	}
	if c, _ := ok.counts(t, 50, 0); c != 50 {
		t.Errorf("allowed listener saw %d connections, want 50", c)
	}
}

// A child made with CLONE_UNTRACED would not be traced: the ptrace
// engine's filter refuses the flag (EPERM), and clone3, whose flags it
// cannot read, altogether (ENOSYS). Under a listener above that traps
// connect, such a child's connect would otherwise run unseen.
func TestPtraceRefusesUntracedChildren(t *testing.T) {
	denied := listen(t, "127.0.0.2")
	for _, parent := range []string{"", "connect,sendto,sendmsg"} {
		t.Run("parent="+parent, func(t *testing.T) {
			skipParentListenerUnderNettrap(t, parent)
			out, _ := confinedWith(t, []string{parentListenerEnv + "=" + parent, engineEnv + "=ptrace"}, "clone-untraced", denied.addr)
			expect(t, out, "EPERM")
		})
	}
	if c, _ := denied.counts(t, 0, 0); c != 0 {
		t.Errorf("denied listener saw %d connections from an untraced child", c)
	}
}

// Netlink sockets handed over under the ptrace engine while signals
// rain: a signal handler's calls come between the calls the hand-over
// makes the thread make, and must not be taken for them; one that
// interrupts the pidfd_getfd while a listener above holds it (a nettrap
// above deciding it) makes the kernel restart it. With
// --userns=off: in a user namespace of its own (auto, as root) the
// victim's capabilities do not cover the starting namespace, and no
// socket needs handing over (TestNetlinkHandedOver).
func TestPtraceHandOverUnderSignals(t *testing.T) {
	for _, parent := range []string{"", "connect,sendto,sendmsg", "pidfd_getfd"} {
		t.Run("parent="+parent, func(t *testing.T) {
			skipParentListenerUnderNettrap(t, parent)
			// The hand-over's pidfd_getfd takes from the supervisor, an
			// ancestor of the victim: the nettrap above denies that, as
			// for any ancestor (TestCrossProcessAccessDenied); in the
			// user namespace it runs this binary in (--userns=auto), no
			// hand-over is needed (TestPtraceNoHandOverUnderForeignOwner).
			skipUnderNettrap(t, "no hand-over can show: in the enclosing nettrap's user namespace none is needed, and with --userns=off it denies the hand-over's pidfd_getfd (the supervisor is the victim's ancestor)")
			// Without a Landlock domain: in one, the hand-over is not
			// tried (ptraceDomain), since the domain refuses it.
			out, rep := confinedWith(t, []string{parentListenerEnv + "=" + parent, engineEnv + "=ptrace", usernsEnv + "=off",
				landlock.NoLandlockEnv + "=1"}, "netlink-storm", "200")
			expect(t, out, "ok:200")
			if os.Geteuid() == 0 && rep.Capless < 200 {
				t.Errorf("%d sockets handed over without capabilities, want 200", rep.Capless)
			}
		})
	}
}

// A supervisor whose network namespace belongs to a user namespace above
// its own (as under a nettrap that runs its command in a user namespace
// of its own) hands no netlink socket over under the ptrace engine: no
// confined thread can hold a capability over that namespace, and the
// nettrap above would refuse the hand-over's pidfd_getfd (it takes from
// an ancestor).
func TestPtraceNoHandOverUnderForeignOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: the role runs as root in a user namespace of its own, mapped to root")
	}
	cmd, report := supervisorCmd(t, "netlink-storm", "50")
	cmd.Env = append(cmd.Env, engineEnv+"=ptrace", usernsEnv+"=off")
	root := []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1}}
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER, UidMappings: root, GidMappings: root}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("supervisor role: %v\n%s", err, out)
	}
	expect(t, strings.Fields(string(out)), "ok:50")
	rep := readReport(t, report)
	if rep.Capless != 0 || len(rep.Errors) > 0 {
		t.Errorf("%d sockets handed over, errors %v; want none of either", rep.Capless, rep.Errors)
	}
}

// The probe's verdict decides the method: a hidden call or no probe
// takes the entry stops; an ABI the probe cannot make calls of (arm on
// an arm64 machine that runs AArch32) takes them only where a listener
// may be above, never where nettrap could install one itself (no
// listener above: asked for --engine=ptrace), the case the arm64 guest
// of issue 38 took them in.
func TestNeedEntryStops(t *testing.T) {
	arm := bpf.ListenerProbe{Unprobed: []string{"arm"}, Others: []string{"bind", "listen"}}
	probeErr := errors.New("no probe")
	for _, tc := range []struct {
		p                   bpf.ListenerProbe
		probeErr, notifyErr error
		want                bool
	}{
		{bpf.ListenerProbe{}, nil, nil, false},
		{bpf.ListenerProbe{}, nil, bpf.ErrListenerAbove, false},
		{bpf.ListenerProbe{Hidden: "connect"}, nil, bpf.ErrListenerAbove, true},
		{bpf.ListenerProbe{Hidden: "connect"}, nil, nil, true},
		{bpf.ListenerProbe{}, probeErr, nil, true},
		{arm, nil, bpf.ErrListenerAbove, true},
		{arm, nil, errors.New("a profile refuses NEW_LISTENER"), true},
		{arm, nil, nil, false},
	} {
		if got := supervisor.NeedEntryStops(tc.p, tc.probeErr, tc.notifyErr); got != tc.want {
			t.Errorf("%+v, probe error %v, listener probe %v: entry stops %v, want %v", tc.p, tc.probeErr, tc.notifyErr, got, tc.want)
		}
	}
}

// TestSealing: --sealed makes the ptrace engine stop every syscall at
// entry under a listener above, whatever the probe saw; nothing else
// changes.
func TestSealing(t *testing.T) {
	under := supervisor.EngineChoice{Engine: supervisor.EnginePtrace, ListenerAbove: true, NotifyErr: bpf.ErrListenerAbove}
	for _, tc := range []struct {
		name   string
		c      supervisor.EngineChoice
		sealed bool
		want   bool
	}{
		{"ptrace under a listener, sealed", under, true, true},
		{"ptrace under a listener, not sealed", under, false, false},
		{"ptrace without a listener, sealed", supervisor.EngineChoice{Engine: supervisor.EnginePtrace}, true, false},
		{"notify, sealed", supervisor.EngineChoice{Engine: supervisor.EngineNotify}, true, false},
		{"already at entry", supervisor.EngineChoice{Engine: supervisor.EnginePtrace, ListenerAbove: true, EntryStops: true}, false, true},
	} {
		if got := tc.c.Sealing(tc.sealed).EntryStops; got != tc.want {
			t.Errorf("%s: entry stops %t, want %t", tc.name, got, tc.want)
		}
	}
	if n := under.Sealing(true).FallbackNotice(); !strings.Contains(n, "stopping every syscall at entry") {
		t.Errorf("the sealed fallback notice does not say the stops: %q", n)
	}
}
