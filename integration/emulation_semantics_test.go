package integration

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/nettrap/nettrap/integration/internal/harness"
	"github.com/nettrap/nettrap/integration/internal/lab"
	"github.com/nettrap/nettrap/integration/internal/netsem"
	"github.com/nettrap/nettrap/integration/internal/sandbox"
	"github.com/nettrap/nettrap/supervisor"
)

// TestEmulationSemantics runs netsem's scenarios (internal/netsem) bare,
// under nettrap --emulate=on and under --emulate=off, as root and as
// nobody, and wants the same result lines from all three: an allowed call
// made by nettrap behaves as the kernel's own. The one line that differs
// by design, where a thread blocked in connect waits, shows that nettrap
// made the calls under on and let the kernel make them under off.
func TestEmulationSemantics(t *testing.T) {
	lab.BareUnderOuter(t)
	sandbox.Require(t)
	requireEmulation(t)
	bins := lab.Programs(t)
	prog := netsem.Build(t).Netsem
	fastOpen(t)
	users := []harness.User{harness.AsSelf}
	if harness.Unprivileged() != harness.AsSelf {
		users = append(users, harness.Unprivileged())
	}
	harness.ForUsers(t, users, func(t *testing.T, u harness.User) {
		// The users' runs side by side: netsem's listeners take
		// ephemeral ports, its unix sockets a directory of their own.
		t.Parallel()
		bare := runNetsem(t, u, prog)
		// Under the kernel engine (its variant, as root) a connect is
		// the kernel's: nettrap emulates none, whatever --emulate says.
		kernelConnects := lab.TestVariant(t) == lab.VariantKernel && u == harness.AsSelf && os.Geteuid() == 0
		for _, mode := range []string{"on", "off"} {
			got := runNetsem(t, u, bins.Nettrap, "--emulate="+mode, "--", prog)
			compareNetsem(t, mode, bare, got, mode == "on" && !kernelConnects)
		}
	})
}

// requireEmulation skips t (fails it when CI=true) where pidfd_getfd is
// refused: --emulate=on cannot run there.
func requireEmulation(t *testing.T) {
	t.Helper()
	if err := supervisor.ProbeEmulation(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%v (CI=true, so this is fatal)", err)
		}
		t.Skip(err)
	}
}

// fastOpen enables TCP Fast Open in the sandbox's namespace for the test,
// client and server, without cookies (0x207), so that data goes in the
// SYN every time; netsem prints the setting it ran with.
func fastOpen(t *testing.T) {
	t.Helper()
	const knob = "/proc/sys/net/ipv4/tcp_fastopen"
	old, err := os.ReadFile(knob)
	if err != nil {
		t.Logf("tcp_fastopen: %v", err)
		return
	}
	if err := os.WriteFile(knob, []byte("519"), 0o644); err != nil {
		t.Logf("tcp_fastopen stays %s: %v", strings.TrimSpace(string(old)), err)
		return
	}
	t.Cleanup(func() { os.WriteFile(knob, old, 0o644) })
}

// netsemRun is one run's result lines.
type netsemRun struct {
	argv    string
	names   []string
	results map[string]string
	stderr  string
}

func runNetsem(t *testing.T, u harness.User, argv ...string) netsemRun {
	t.Helper()
	stdout, stderr, code := runAs(t, u, os.TempDir(), (*exec.Cmd).Run, argv...)
	if code != 0 {
		t.Fatalf("%s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(argv, " "), code, stdout, stderr)
	}
	names, results, err := netsem.Lines(stdout)
	if err != nil {
		t.Fatalf("%s: %v\nstdout:\n%s", strings.Join(argv, " "), err, stdout)
	}
	return netsemRun{strings.Join(argv, " "), names, results, stderr}
}

// compareNetsem wants the lines of got (under --emulate=mode) to be the
// bare run's, and its tell line to say whether nettrap made the blocking
// connect (emulated) or the kernel did.
func compareNetsem(t *testing.T, mode string, bare, got netsemRun, emulated bool) {
	t.Helper()
	failed := t.Failed()
	defer func() {
		if t.Failed() && !failed {
			t.Logf("stderr under nettrap --emulate=%s:\n%s", mode, got.stderr)
		}
	}()
	if !slices.Equal(bare.names, got.names) {
		t.Errorf("emulate=%s: scenarios %v, bare %v", mode, got.names, bare.names)
	}
	for _, name := range bare.names {
		if name == netsem.Tell {
			continue
		}
		if b, g := bare.results[name], got.results[name]; b != g {
			t.Errorf("emulate=%s: %s: %q, bare %q", mode, name, g, b)
		}
	}
	tell, bareTell := got.results[netsem.Tell], bare.results[netsem.Tell]
	// Waiting for nettrap: in the notify engine's seccomp wait, or in
	// a ptrace stop under the ptrace engine (engine variants).
	byNettrap := strings.Contains(tell, "seccomp") ||
		(lab.TestVariant(t) != lab.VariantDefault && strings.Contains(tell, "ptrace_stop"))
	switch {
	case strings.Contains(bareTell, "seccomp"):
		t.Errorf("bare: a blocked connect waits in %q", bareTell)
	case emulated && !byNettrap:
		t.Errorf("emulate=%s: the blocked connect waits in %q, not for nettrap: it was not emulated", mode, tell)
	case !emulated && byNettrap:
		t.Errorf("emulate=%s: the blocked connect waits in %q: it was emulated", mode, tell)
	}
	if emulated && strings.Contains(got.stderr, "emulation unavailable") {
		t.Errorf("emulate=%s: %s", mode, got.stderr)
	}
}
