package gocmd

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/nettrap/nettrap/integration/internal/harness"
	"github.com/nettrap/nettrap/integration/internal/lab"
	"github.com/nettrap/nettrap/integration/internal/runmod"
)

// gotestsum finds gotestsum on PATH (.ci/run installs it from the Go
// module proxy); without it the test skips, or fails when CI=true.
func gotestsum(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("gotestsum")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("gotestsum not on PATH (CI=true, so this is fatal): %v; install: go install gotest.tools/gotestsum@v1.13.0", err)
		}
		t.Skipf("gotestsum not on PATH: %v; install: go install gotest.tools/gotestsum@v1.13.0", err)
	}
	return p
}

// TestGotestsum: both documented ways to use nettrap with gotestsum report
// the test nettrap failed and exit 1. With --raw-command, nettrap's
// summary goes to a file (--summary=FILE): gotestsum takes every stderr
// line for an error, prints it twice and counts it.
func TestGotestsum(t *testing.T) {
	gts := gotestsum(t)
	nettrap := harness.Nettrap(t)
	summary := filepath.Join(t.TempDir(), "summary.txt")
	for name, args := range map[string][]string{
		"exec":        {"--format=standard-verbose", "--", "-count=1", "-exec", nettrap, "./leaky/"},
		"raw-command": {"--format=standard-verbose", "--raw-command", "--", nettrap, "--summary=" + summary, "--", "go", "test", "-json", "-count=1", "./leaky/"},
	} {
		t.Run(name, func(t *testing.T) {
			run := runModIn(t, runmod.Env("NETTRAP_AUDIT_LOG="+harness.AuditPath(t)), gts, args...)
			out := run.Stdout + run.Stderr
			if run.Code != 1 {
				t.Errorf("gotestsum exit %d, want 1\n%s", run.Code, out)
			}
			if !strings.Contains(out, "--- FAIL: TestLeak") || !strings.Contains(out, "Outbound network blocked: connect tcp 203.0.113.7:443 (external) during TestLeak") {
				t.Errorf("gotestsum output lacks TestLeak's failure and nettrap's line:\n%s", out)
			}
			if !strings.Contains(out, "--- PASS: TestFine") {
				t.Errorf("gotestsum output lacks the passing test:\n%s", out)
			}
			if strings.Contains(out, "=== Errors") || strings.Contains(out, " error") {
				t.Errorf("gotestsum counted errors:\n%s", out)
			}
		})
	}
	b, err := os.ReadFile(summary)
	if err != nil || !strings.Contains(string(b), "nettrap: 1 outbound network attempt blocked") || !strings.Contains(string(b), "TestLeak") {
		t.Errorf("--summary=FILE: %v\n%s", err, b)
	}
}

// TestGotestsumRawCommandClean: the documented recipe on a clean package
// gives gotestsum nothing but test2json: 0 errors.
func TestGotestsumRawCommandClean(t *testing.T) {
	gts := gotestsum(t)
	args := []string{"--raw-command", "--", harness.Nettrap(t), "--summary=off", "--", "go", "test", "-json", "-count=1", "./clean/"}
	run := runModIn(t, runmod.Env(), gts, args...)
	out := run.Stdout + run.Stderr
	if run.Code != 0 || !strings.Contains(out, "DONE 2 tests in") || strings.Contains(out, "error") || strings.Contains(out, "nettrap:") {
		t.Errorf("gotestsum exit %d, want 0 with 2 tests and no error:\n%s", run.Code, out)
	}
	// The same with NETTRAP_SUMMARY=off.
	run = runModIn(t, runmod.Env("NETTRAP_SUMMARY=off"), gts, slices.Delete(slices.Clone(args), 3, 4)...)
	out = run.Stdout + run.Stderr
	if run.Code != 0 || !strings.Contains(out, "DONE 2 tests in") || strings.Contains(out, "error") {
		t.Errorf("NETTRAP_SUMMARY=off: gotestsum exit %d:\n%s", run.Code, out)
	}
}

// TestGotestsumUnderParentListener: under a seccomp listener above
// nettrap (WSL2's init), where auto falls back to the ptrace engine, a
// clean run through gotestsum --raw-command counts no error: the one-line
// fallback notice goes where the summary goes (--summary=off: nowhere;
// --summary=FILE: that file), not to stderr.
func TestGotestsumUnderParentListener(t *testing.T) {
	gts := gotestsum(t)
	b := lab.Programs(t)
	summary := filepath.Join(t.TempDir(), "summary.txt")
	for name, flag := range map[string]string{"off": "--summary=off", "file": "--summary=" + summary} {
		t.Run(name, func(t *testing.T) {
			argv := lab.UnderParent(b, "bind,listen", "", b.Plain, flag, "--", "go", "test", "-json", "-count=1", "./clean/")
			run := runModIn(t, runmod.Env(), gts, append([]string{"--format=standard-verbose", "--raw-command", "--"}, argv...)...)
			out := run.Stdout + run.Stderr
			if run.Code != 0 || !strings.Contains(out, "--- PASS: TestPure") {
				t.Errorf("gotestsum exit %d, want 0 and the clean package passing\n%s", run.Code, out)
			}
			if strings.Contains(out, "=== Errors") || strings.Contains(out, " error") || strings.Contains(out, lab.ParentNotice) {
				t.Errorf("gotestsum counted errors (or showed the notice):\n%s", out)
			}
		})
	}
	if b, err := os.ReadFile(summary); err != nil || !strings.Contains(string(b), lab.ParentNotice) {
		t.Errorf("--summary=FILE lacks the fallback notice: %v\n%s", err, b)
	}
}

var updateGotestsum = flag.Bool("update-gotestsum", false, "rewrite testdata/gotestsum.golden")

// TestGotestsumPackageVerdict: a package whose tests fail (TestOdd's bad
// marker) and that carries a verdict of its own (a goroutine of TestA
// dials during TestB: no running test owns the call) shows both in
// gotestsum's default output, under both documented commands. gotestsum
// shows a package's own output only when no test of it failed, so the
// package's lines are also those of the failed test "nettrap"
// (teststream.PackageTest). The "=== Failed" section is compared with
// testdata/gotestsum.golden, durations, line numbers and the stack's
// frames (the audit log's business) left out.
func TestGotestsumPackageVerdict(t *testing.T) {
	gts := gotestsum(t)
	nettrap := harness.Nettrap(t)
	dir, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "gotestsum.golden")
	for _, name := range []string{"exec", "raw-command"} {
		args := map[string][]string{
			"exec":        {"--", "-count=1", "-exec", nettrap, "./leftover/"},
			"raw-command": {"--raw-command", "--", nettrap, "--summary=off", "--", "go", "test", "-json", "-count=1", "./leftover/"},
		}[name]
		t.Run(name, func(t *testing.T) {
			run := runModAt(t, dir, nil, runmod.Env(), gts, args...)
			if run.Code != 1 {
				t.Errorf("gotestsum exit %d, want 1\n%s%s", run.Code, run.Stdout, run.Stderr)
			}
			got := gotestsumFailed(run.Stdout)
			matchGolden(t, golden, got, *updateGotestsum && name == "exec", "update-gotestsum", "gotestsum's failures", "\nwhole output:\n"+run.Stdout+run.Stderr)
		})
	}
}

var (
	gotestsumFrame    = regexp.MustCompile(`^\s+\S+:\d+ \(\S+\)$`)
	gotestsumDuration = regexp.MustCompile(`\d+(\.\d+)?m?s\b`)
	gotestsumLine     = regexp.MustCompile(`\.go:\d+`)
)

// gotestsumFailed is gotestsum's output from its "=== Failed" section
// on, normalized: durations and line numbers left out, and the stack's
// frames.
func gotestsumFailed(out string) string {
	_, failed, ok := strings.Cut(out, "\n=== Failed\n")
	if !ok {
		return "(no === Failed section)\n" + out
	}
	var b strings.Builder
	b.WriteString("=== Failed\n")
	for line := range strings.Lines(failed) {
		line = strings.TrimSuffix(line, "\n")
		if gotestsumFrame.MatchString(line) {
			continue
		}
		line = gotestsumDuration.ReplaceAllString(line, "Ds")
		b.WriteString(gotestsumLine.ReplaceAllString(line, ".go:N") + "\n")
	}
	return b.String()
}
