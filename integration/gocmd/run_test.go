package gocmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nettrap/nettrap/integration/internal/fakehost"
	"github.com/nettrap/nettrap/integration/internal/harness"
	"github.com/nettrap/nettrap/integration/internal/runmod"
)

const fixMod = "example.com/runfix/"

// blockedEndpoints are what the fixture's leaky tests aim at: every
// attempt must be denied.
var blockedEndpoints = []fakehost.Endpoint{
	fakehost.TCP("203.0.113.7:443"), // leaky.TestLeak
	fakehost.TCP("10.0.0.1:80"),     // mainleak's TestMain
	fakehost.TCP("192.0.2.1:443"),   // parallel.TestParA
	fakehost.TCP("[2001:db8::1]:443"),
	fakehost.UDP("[2001:db8::1]:443"), // parallel.TestParB
}

func readRunAudit(t *testing.T, path string) []runAuditRecord {
	t.Helper()
	return harness.ReadJSONL[runAuditRecord](t, path)
}

// TestRunGoTestModule is the "done when": a module with leaky,
// clean, TestMain-leaky and parallel packages, run in parallel.
func TestRunGoTestModule(t *testing.T) {
	h := fakehost.Start(t, append(slices.Clone(blockedEndpoints), fakehost.TCP("198.51.100.1:80"))...)
	log := harness.AuditPath(t)
	mark := h.Mark()
	run := runModGoTest(t, runmod.Env(), []string{"--audit-log", log}, "-count=1", "-p=4", "./...")
	if run.Code != 1 {
		t.Fatalf("exit %d, want 1 (tests failed by nettrap)\nstdout: %s\nstderr: %s", run.Code, run.Stdout, run.Stderr)
	}
	harness.AssertNothingArrived(t, h, mark, blockedEndpoints...)
	recs := readRunAudit(t, log)
	runID := ""
	denied := map[string]int{} // package dest -> count
	for _, r := range recs {
		if r.RunID == "" || (runID != "" && r.RunID != runID) {
			t.Errorf("record with run id %q, want one run id for all: %+v", r.RunID, r)
		}
		runID = r.RunID
		if r.Decision != "denied" {
			continue
		}
		if r.Package == "" || (r.Test == "" && len(r.Candidates) == 0) {
			t.Errorf("denied record does not name package and test: %+v", r)
		}
		denied[strings.TrimPrefix(r.Package, fixMod)+" "+r.Dest]++
		switch r.Package {
		case fixMod + "leaky":
			if r.Test != "TestLeak" {
				t.Errorf("leaky's attempt attributed to %q %v, want TestLeak", r.Test, r.Candidates)
			}
		case fixMod + "mainleak":
			if r.Test != "collection" {
				t.Errorf("TestMain's attempt attributed to %q, want collection", r.Test)
			}
		case fixMod + "parallel":
			who := append([]string{r.Test}, r.Candidates...)
			if !slices.Contains(who, "TestParA") && !slices.Contains(who, "TestParB") {
				t.Errorf("parallel attempt attributed to %v", who)
			}
		}
	}
	want := map[string]int{
		"leaky 203.0.113.7:443":      1,
		"mainleak 10.0.0.1:80":       1,
		"parallel 192.0.2.1:443":     1,
		"parallel [2001:db8::1]:443": 2,
	}
	if !mapsEqual(denied, want) {
		t.Errorf("denied records by package and destination:\n got %v\nwant %v", denied, want)
	}
	summary := run.Stderr[strings.Index(run.Stderr, "nettrap: 5 outbound network attempts blocked")+1:]
	if !strings.Contains(run.Stderr, "nettrap: 5 outbound network attempts blocked in 3 packages") {
		t.Fatalf("no summary headline in stderr:\n%s", run.Stderr)
	}
	for _, want := range []string{
		fixMod + "leaky", "TestLeak", "203.0.113.7:443",
		fixMod + "mainleak", "(collection)", "10.0.0.1:80",
		fixMod + "parallel", "192.0.2.1:443", "[2001:db8::1]:443",
		"TestMarked", "198.51.100.1:80", "allowed: marked test", "TestStaleMarker",
		"nettrap: total: 4 blocked in tests, 1 at collection time, 1 allowed, 1 stale marker",
		"audit log " + log, "run " + runID,
	} {
		if !strings.Contains(summary, want) {
			t.Errorf("summary lacks %q:\n%s", want, summary)
		}
	}
	if strings.Contains(run.Stdout, "nettrap: total") {
		t.Error("the summary went to stdout; it belongs on stderr")
	}
	// nettrap report prints the same from the log, and exits 1 on its
	// blocked attempts.
	rep := runModIn(t, runmod.Env(), harness.Nettrap(t), "report", log)
	if rep.Code != 1 || !strings.Contains(rep.Stdout, "nettrap: total: 4 blocked in tests, 1 at collection time") {
		t.Errorf("nettrap report: exit %d\n%s%s", rep.Code, rep.Stdout, rep.Stderr)
	}
}

// TestRunGoTestClean: no leaks, status 0, one line, and no temporary
// audit log left behind (nothing in it to look at).
func TestRunGoTestClean(t *testing.T) {
	tmp := t.TempDir()
	run := runModGoTest(t, runmod.Env("TMPDIR="+tmp), nil, "-count=1", "./clean/...")
	if run.Code != 0 {
		t.Fatalf("exit %d, want 0\nstdout: %s\nstderr: %s", run.Code, run.Stdout, run.Stderr)
	}
	lines := nettrapLines(run.Stderr)
	if len(lines) != 1 || !strings.Contains(lines[0], "no outbound network attempt blocked") {
		t.Errorf("want one line saying nothing was blocked, got %q", lines)
	}
	if !strings.Contains(run.Stdout, "ok  \t"+fixMod+"clean") {
		t.Errorf("go test output missing:\n%s", run.Stdout)
	}
	if len(lines) == 1 && strings.Contains(lines[0], "audit log") {
		t.Errorf("the line names a log that is gone: %q", lines[0])
	}
	if left := tmpRuns(t, tmp); len(left) != 0 {
		t.Errorf("a clean run left %q", left)
	}
}

// TestRunGoTestJSON: -json output stays valid test2json on stdout, with
// the verdict in it; the summary is on stderr.
func TestRunGoTestJSON(t *testing.T) {
	run := runModGoTest(t, runmod.Env(), []string{"--audit-log", harness.AuditPath(t)}, "-json", "-count=1", "./leaky/")
	if run.Code != 1 {
		t.Fatalf("exit %d, want 1\nstderr: %s", run.Code, run.Stderr)
	}
	failed := false
	for line := range strings.SplitSeq(strings.TrimSpace(run.Stdout), "\n") {
		var ev struct{ Action, Package, Test, Output string }
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("stdout line is not JSON: %q: %v", line, err)
		}
		if ev.Action == "fail" && ev.Test == "TestLeak" && ev.Package == fixMod+"leaky" {
			failed = true
		}
	}
	if !failed {
		t.Errorf("no fail event for TestLeak:\n%s", run.Stdout)
	}
	if !strings.Contains(run.Stderr, "nettrap: 1 outbound network attempt blocked") {
		t.Errorf("no summary on stderr:\n%s", run.Stderr)
	}
}

// TestRunGoTestRefusesUserExec: nettrap owns -exec.
func TestRunGoTestRefusesUserExec(t *testing.T) {
	for name, tc := range map[string]struct {
		env  []string
		args []string
	}{
		"flag":    {nil, []string{"-exec", "/bin/true", "./clean/"}},
		"flag=":   {nil, []string{"-exec=/bin/true", "./clean/"}},
		"GOFLAGS": {[]string{"GOFLAGS=-count=1 -exec=/bin/true"}, []string{"./clean/"}},
	} {
		t.Run(name, func(t *testing.T) {
			run := runModGoTest(t, runmod.Env(tc.env...), nil, tc.args...)
			if run.Code != 125 || !strings.Contains(run.Stderr, "drop your -exec") {
				t.Errorf("exit %d, want 125 with a reason\nstderr: %s", run.Code, run.Stderr)
			}
		})
	}
}

// TestRunGoTestGitHubActions: annotations on stderr and the Markdown
// summary appended to $GITHUB_STEP_SUMMARY.
func TestRunGoTestGitHubActions(t *testing.T) {
	stepSummary := filepath.Join(t.TempDir(), "step_summary.md")
	if err := os.WriteFile(stepSummary, []byte("earlier step\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := runmod.Env("GITHUB_ACTIONS=true", "GITHUB_STEP_SUMMARY="+stepSummary)
	run := runModGoTest(t, env, []string{"--audit-log", harness.AuditPath(t)}, "-count=1", "./leaky/", "./mainleak/")
	if run.Code != 1 {
		t.Fatalf("exit %d, want 1\nstderr: %s", run.Code, run.Stderr)
	}
	var annotations []string
	for line := range strings.SplitSeq(run.Stderr, "\n") {
		if strings.HasPrefix(line, "::error ") {
			annotations = append(annotations, line)
		}
	}
	if len(annotations) != 2 {
		t.Fatalf("want 2 annotations (TestLeak, TestMain), got %d:\n%s", len(annotations), run.Stderr)
	}
	joined := strings.Join(annotations, "\n")
	for _, want := range []string{"TestLeak", "203.0.113.7:443", "at collection time", "10.0.0.1:80"} {
		if !strings.Contains(joined, want) {
			t.Errorf("annotations lack %q:\n%s", want, joined)
		}
	}
	md, err := os.ReadFile(stepSummary)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"earlier step\n### nettrap\n", "`TestLeak`", "`203.0.113.7:443`", "`" + fixMod + "mainleak`"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("step summary lacks %q:\n%s", want, md)
		}
	}
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
