package gocmd

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/nettrap/nettrap/integration/internal/fakehost"
	"github.com/nettrap/nettrap/integration/internal/harness"
	"github.com/nettrap/nettrap/integration/internal/lab"
	"github.com/nettrap/nettrap/integration/internal/runmod"
)

// The leaky package's endpoints: TestLeak's is blocked, TestMarked's is
// reached.
var (
	leakEndpoint   = fakehost.TCP("203.0.113.7:443")
	markedEndpoint = fakehost.TCP("198.51.100.1:80")
)

// requireMake skips without make, or fails when CI=true.
func requireMake(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("make"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("make not on PATH (CI=true, so this is fatal): %v; install Debian's make package", err)
		}
		t.Skipf("make not on PATH: %v (Debian: apt-get install make)", err)
	}
}

// TestRunHubMake: `nettrap -- make test` confines the whole tree and still
// names the test that leaked: the go command's test binaries run through
// inner nettraps that tell the outer one which test is running.
func TestRunHubMake(t *testing.T) {
	requireMake(t)
	h := fakehost.Start(t, leakEndpoint, markedEndpoint)
	log := harness.AuditPath(t)
	mark := h.Mark()
	run := runModIn(t, runmod.Env(), harness.Nettrap(t), "--audit-log", log, "--", "make", "test")
	if run.Code != 2 {
		t.Fatalf("exit %d, want make's own 2 (a recipe failed)\nstdout: %s\nstderr: %s", run.Code, run.Stdout, run.Stderr)
	}
	checkHubLeaky(t, h, mark, run, log)
	if !strings.Contains(run.Stdout, "ok  \t"+fixMod+"clean") {
		t.Errorf("the clean package did not pass:\n%s", run.Stdout)
	}
	if !strings.Contains(run.Stderr, "make: *** [Makefile") {
		t.Errorf("make's own failure line missing:\n%s", run.Stderr)
	}
}

// TestRunHubShell: a script running go test, with the parallel and
// TestMain packages too, names the same tests as `nettrap -- go test`.
func TestRunHubShell(t *testing.T) {
	h := fakehost.Start(t, append(slices.Clone(blockedEndpoints), markedEndpoint)...)
	log := harness.AuditPath(t)
	mark := h.Mark()
	run := runModIn(t, runmod.Env(), harness.Nettrap(t), "--audit-log", log, "--",
		"sh", "-c", "go test -count=1 -p=4 ./... && echo unreachable")
	if run.Code != 1 {
		t.Fatalf("exit %d, want sh's 1 (go test failed)\nstdout: %s\nstderr: %s", run.Code, run.Stdout, run.Stderr)
	}
	harness.AssertNothingArrived(t, h, mark, blockedEndpoints...)
	checkHubLeaky(t, h, mark, run, log)
	denied := map[string]string{}
	for _, r := range readRunAudit(t, log) {
		if r.Decision == "denied" {
			denied[strings.TrimPrefix(r.Package, fixMod)+" "+r.Dest] = strings.Join(append([]string{r.Test}, r.Candidates...), ",")
		}
	}
	if got := denied["mainleak 10.0.0.1:80"]; got != "collection" {
		t.Errorf("TestMain's attempt attributed to %q, want collection (all: %v)", got, denied)
	}
	if got := denied["parallel 192.0.2.1:443"]; !strings.Contains(got, "TestParA") {
		t.Errorf("parallel attempt attributed to %q, want TestParA among them (all: %v)", got, denied)
	}
	if strings.Contains(run.Stdout, "unreachable") {
		t.Error("go test exited 0 under the script")
	}
}

// TestRunHubExplicitExec: `go test -exec nettrap` typed inside a generic
// run finds the outer nettrap through the environment, with no GOFLAGS.
func TestRunHubExplicitExec(t *testing.T) {
	h := fakehost.Start(t, leakEndpoint, markedEndpoint)
	log := harness.AuditPath(t)
	nt := harness.Nettrap(t)
	mark := h.Mark()
	run := runModIn(t, runmod.Env("NT="+nt), nt, "--audit-log", log, "--",
		"bash", "-c", `GOFLAGS= go test -count=1 -exec "$NT" ./leaky/ ./clean/`)
	if run.Code != 1 {
		t.Fatalf("exit %d, want 1\nstdout: %s\nstderr: %s", run.Code, run.Stdout, run.Stderr)
	}
	checkHubLeaky(t, h, mark, run, log)
}

// TestRunHubNoGoTest: a script that runs no go test ends with no summary
// and leaves no audit log behind (as before there was a hub).
func TestRunHubNoGoTest(t *testing.T) {
	run := runModIn(t, runmod.Env(), harness.Nettrap(t), "--", "sh", "-c", "exit 3")
	if run.Code != 3 {
		t.Fatalf("exit %d, want the script's 3\nstderr: %s", run.Code, run.Stderr)
	}
	if lines := nettrapLines(run.Stderr); len(lines) != 0 {
		t.Errorf("nettrap said %q for a run with nothing to report", lines)
	}
}

// TestRunHubOutsideARun: the variable alone does not make an unconfined
// nettrap run tests without a filter.
func TestRunHubOutsideARun(t *testing.T) {
	lab.SkipUnder(t, "under an outer nettrap every process is under a seccomp filter: a nettrap with no filter above cannot be had", lab.VariantOuter)
	run := runModIn(t, runmod.Env("NETTRAP_HUB=/nonexistent/hub.sock"), harness.Nettrap(t), "--", "true")
	if run.Code != 125 || !strings.Contains(run.Stderr, "not under a seccomp filter") {
		t.Errorf("exit %d, want 125 with the reason\nstderr: %s", run.Code, run.Stderr)
	}
}

// checkHubLeaky checks the leaky package's outcome in a hub run: TestLeak
// failed with the nettrap line under it, TestMarked reached its host, the
// summary and the audit log name the tests. mark was taken before the run.
func checkHubLeaky(t *testing.T, h *fakehost.Host, mark fakehost.Cursor, run harness.Run, log string) {
	t.Helper()
	harness.AssertNothingArrived(t, h, mark, leakEndpoint)
	if _, ok := h.WaitFor(mark, fakehost.To(markedEndpoint.Proto, markedEndpoint.Addr), harness.Timeout); !ok {
		t.Errorf("TestMarked's connection never reached %s:\n%s", markedEndpoint, h.Dump())
	}
	blocked := "    nettrap: Outbound network blocked: connect tcp 203.0.113.7:443 (external) during TestLeak"
	if i := strings.Index(run.Stdout, "--- FAIL: TestLeak"); i < 0 || !strings.HasPrefix(run.Stdout[strings.IndexByte(run.Stdout[i:], '\n')+i+1:], blocked) {
		t.Errorf("want --- FAIL: TestLeak with %q under it:\n%s", blocked, run.Stdout)
	}
	if !strings.Contains(run.Stdout, "FAIL\t"+fixMod+"leaky") {
		t.Errorf("the leaky package did not fail:\n%s", run.Stdout)
	}
	for _, want := range []string{
		"outbound network attempt", "blocked in", fixMod + "leaky", "TestLeak", "203.0.113.7:443",
		"TestMarked", "198.51.100.1:80", "allowed: marked test", "TestStaleMarker", "audit log " + log,
	} {
		if !strings.Contains(run.Stderr, want) {
			t.Errorf("summary lacks %q:\n%s", want, run.Stderr)
		}
	}
	var leak, marked, stale bool
	for _, r := range readRunAudit(t, log) {
		switch {
		case r.Decision == "denied" && r.Dest == "203.0.113.7:443":
			leak = r.Package == fixMod+"leaky" && r.Test == "TestLeak" && r.PID > 0
		case r.Decision == "allowed" && r.Dest == "198.51.100.1:80":
			marked = r.Test == "TestMarked" && r.Marked
		case r.Decision == "stale-marker":
			stale = r.Test == "TestStaleMarker" && r.Package == fixMod+"leaky"
		}
	}
	if !leak || !marked || !stale {
		t.Errorf("audit log: TestLeak denied %v, TestMarked allowed %v, TestStaleMarker stale %v; want all", leak, marked, stale)
	}
}

// TestRunAllowTestRules: an --allow-test rule may name a package
// (`leaky.^TestLeak$` allows leaky's TestLeak only), and a rule that named
// no test with an attempt in the whole run is reported as an unused rule,
// in the summary and the audit log, never as a stale marker of the tests
// it happens to match (leaky's TestFine).
func TestRunAllowTestRules(t *testing.T) {
	h := fakehost.Start(t, leakEndpoint, markedEndpoint)
	log := harness.AuditPath(t)
	mark := h.Mark()
	run := runModIn(t, runmod.Env(), harness.Nettrap(t), "--audit-log", log,
		"--allow-test", "leaky.^TestLeak$", "--allow-test", "^TestFine$", "--allow-test", "clean.^TestLeak$",
		"--", "go", "test", "-count=1", "./leaky", "./clean")
	if run.Code != 0 {
		t.Fatalf("exit %d, want 0 (TestLeak allowed by its rule)\nstdout: %s\nstderr: %s", run.Code, run.Stdout, run.Stderr)
	}
	if _, ok := h.WaitFor(mark, fakehost.To(leakEndpoint.Proto, leakEndpoint.Addr), harness.Timeout); !ok {
		t.Errorf("TestLeak's connect, allowed by leaky.^TestLeak$, never reached %s:\n%s", leakEndpoint, h.Dump())
	}
	unused := map[string]bool{}
	var allowedBy []string
	reason := ""
	for _, r := range readRunAudit(t, log) {
		switch {
		case r.Decision == "unused-rule":
			for _, a := range r.AllowTest {
				unused[a] = true
			}
		case r.Decision == "allowed" && r.Test == "TestLeak":
			allowedBy, reason = r.AllowTest, r.Reason
		case r.Decision == "stale-marker" && r.Test != "TestStaleMarker":
			t.Errorf("a test matched by a rule reported as a stale marker: %+v", r)
		}
	}
	if !slices.Equal(allowedBy, []string{"leaky.^TestLeak$"}) {
		t.Errorf("TestLeak's allowed record lists rules %q, want [leaky.^TestLeak$]", allowedBy)
	}
	// The reason names the rule that let the call through, in the audit
	// log and the summary.
	const wantReason = "allowed: --allow-test 'leaky.^TestLeak$'"
	if reason != wantReason {
		t.Errorf("TestLeak's allowed record has reason %q, want %q", reason, wantReason)
	}
	if !strings.Contains(run.Stderr, wantReason) {
		t.Errorf("summary lacks %q:\n%s", wantReason, run.Stderr)
	}
	if len(unused) != 2 || !unused["^TestFine$"] || !unused["clean.^TestLeak$"] {
		t.Errorf("unused rules in the audit log %v, want ^TestFine$ and clean.^TestLeak$", unused)
	}
	for _, want := range []string{"Unused --allow-test rules", "^TestFine$", "clean.^TestLeak$", "2 unused --allow-test rules"} {
		if !strings.Contains(run.Stderr, want) {
			t.Errorf("summary lacks %q:\n%s", want, run.Stderr)
		}
	}
	if strings.Contains(run.Stderr, "stale marker: TestFine") {
		t.Errorf("TestFine reported as a stale marker:\n%s", run.Stderr)
	}
}
