package gocmd

import (
	"flag"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/nettrap/nettrap/integration/internal/fakehost"
	"github.com/nettrap/nettrap/integration/internal/harness"
	"github.com/nettrap/nettrap/integration/internal/sandbox"
)

// TestAuditModeExecLog: `go test -exec 'nettrap --mode=audit'` with no
// audit log, two packages with attempts, neither failing, no -v: go
// test hides both packages' output, so nettrap puts every finding in one
// log for the go command and says once, on the go command's stderr,
// where it is; the log has both packages' would-be denials; a run with
// no finding says nothing and leaves no log.
func TestAuditModeExecLog(t *testing.T) {
	sandbox.Require(t)
	eps := append(whereEndpoints(), tcpEP(fxHome, 2003))
	fakehost.Start(t, eps...) // audit mode lets the attempts through, to these
	tmp := t.TempDir()
	exec := harness.Nettrap(t) + " --mode=audit"
	out, code := goCmd(t, fixtureRoot(t), harness.GoEnv("TMPDIR="+tmp), "test", "-count=1", "-exec", exec, "./where", "./initleak")
	if code != 0 {
		t.Fatalf("go test exit %d, want 0 (audit mode fails nothing)\n%s", code, out)
	}
	said := harness.LinesWithPrefix(out, "nettrap: audit mode: the findings of this go test run are in ")
	if len(said) != 1 {
		t.Fatalf("want the log named once, got %d times:\n%s", len(said), out)
	}
	logs, _ := filepath.Glob(filepath.Join(tmp, "nettrap-audit-*", "go-test-*.jsonl"))
	if len(logs) != 1 || !strings.Contains(said[0], " "+logs[0]+" ") {
		t.Fatalf("logs %q, line %q: want one log, the one the line names", logs, said[0])
	}
	if strings.Contains(out, "would block") {
		t.Errorf("go test showed a passing package's output:\n%s", out)
	}
	var pkgs []string
	n := 0
	for _, r := range rawRecords(t, logs[0]) {
		if r["decision"] == "would-deny" {
			n++
			if p, _ := r["package"].(string); !slices.Contains(pkgs, p) {
				pkgs = append(pkgs, p)
			}
		}
	}
	slices.Sort(pkgs)
	if n != 9 || !slices.Equal(pkgs, []string{fixtureModule + "/initleak", fixtureModule + "/where"}) {
		t.Errorf("log has %d would-deny records of packages %q, want 9 (where's 8, initleak's 1) of both", n, pkgs)
	}
	rep := harness.RunIn(t, tmp, harness.GoEnv(), harness.Nettrap(t), "report", logs[0])
	if rep.Code != 0 || !strings.Contains(rep.Stdout, "TestDirect") {
		t.Errorf("nettrap report on the log: exit %d\n%s%s", rep.Code, rep.Stdout, rep.Stderr)
	}

	// No finding: nothing said, no log.
	clean := t.TempDir()
	out, code = goCmd(t, fixtureRoot(t), harness.GoEnv("TMPDIR="+clean), "test", "-count=1", "-exec", exec, "./clean")
	logs, _ = filepath.Glob(filepath.Join(clean, "nettrap-audit-*", "*"))
	if code != 0 || strings.Contains(out, "nettrap:") || len(logs) != 0 {
		t.Errorf("a run with no finding: exit %d, files %q, output:\n%s", code, logs, out)
	}
}

// updateExecSummary rewrites testdata/exec-summary.golden from a run (go
// test -run TestExecSummary -update-exec-summary ./integration/gocmd/).
var updateExecSummary = flag.Bool("update-exec-summary", false, "rewrite testdata/exec-summary.golden")

// TestExecSummary: `go test -json -exec nettrap` with no audit log, on
// a package with blocked attempts (where), one whose test looks a name
// up (lookup) and a clean one. No nettrap sees the whole run, so each
// package's nettrap prints the summary of its package's findings once,
// in the package's output (output events of the package, where go test
// and gotestsum show them), naming one audit log for the go command,
// which holds every package's records under one run id; the clean
// package prints none. The summaries, run id and log path aside, are
// testdata/exec-summary.golden; a lookup's row counts the queries the
// log holds; nettrap report --stacks prints the whole stacks the lines
// show only the module's frames of. Nothing arrives at the fake hosts.
func TestExecSummary(t *testing.T) {
	sandbox.Require(t)
	eps := append(whereEndpoints(), append(fakehost.Both("192.0.2.53:53"), fakehost.Both("[2001:db8::53]:53")...)...)
	h := fakehost.Start(t, eps...)
	mark := h.Mark()
	tmp := t.TempDir()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	run := harness.RunIn(t, fixtureRoot(t), harness.GoEnv("TMPDIR="+tmp), gobin, "test", "-json", "-count=1", "-exec", harness.Nettrap(t), "./where", "./lookup", "./clean")
	if run.Code != 1 {
		t.Fatalf("go test exit %d, want 1\nstdout:\n%s\nstderr:\n%s", run.Code, run.Stdout, run.Stderr)
	}
	checkArrivals(t, h, mark, eps, nil)
	logs, _ := filepath.Glob(filepath.Join(tmp, "nettrap-audit-*", "go-test-*.jsonl"))
	if len(logs) != 1 {
		t.Fatalf("logs %q, want one for the go command", logs)
	}
	// The packages' own output: output events of no test.
	pkgOut := map[string]string{}
	for _, e := range decodeJSON(t, run.Stdout) {
		if e.Action == "output" && e.Test == "" {
			pkgOut[strings.TrimPrefix(e.Package, fixtureModule+"/")] += e.Output
		}
	}
	var got strings.Builder
	runIDs := map[string]bool{}
	for _, pkg := range []string{"where", "lookup", "clean"} {
		sums := summaryBlocks(pkgOut[pkg])
		if want := map[bool]int{true: 1, false: 0}[pkg != "clean"]; len(sums) != want {
			t.Errorf("package %s: %d summaries in its output, want %d:\n%s", pkg, len(sums), want, pkgOut[pkg])
		}
		for _, s := range sums {
			m := regexp.MustCompile(`\(run ([0-9a-f]+); audit log (\S+)\)`).FindStringSubmatch(s)
			if m == nil || m[2] != logs[0] {
				t.Errorf("package %s: summary does not name the run and the log %s:\n%s", pkg, logs[0], s)
				continue
			}
			runIDs[m[1]] = true
			s = strings.ReplaceAll(strings.ReplaceAll(s, m[1], "RUN"), m[2], "LOG")
			fmt.Fprintf(&got, "# %s\n%s\n", pkg, regexp.MustCompile(`\d+ queries`).ReplaceAllString(s, "N queries"))
		}
	}
	if len(runIDs) != 1 {
		t.Errorf("run ids %v, want one for the go command", runIDs)
	}
	golden := filepath.Join(fixtureRoot(t), "exec-summary.golden")
	matchGolden(t, golden, got.String(), *updateExecSummary, "update-exec-summary", "summaries", "")
	// The whole stack, which a line shows only the module's frames of,
	// is the log's, and nettrap report --stacks prints it.
	rep := harness.RunIn(t, tmp, harness.GoEnv(), harness.Nettrap(t), "report", "--stacks", logs[0])
	if rep.Code != 1 || !strings.Contains(rep.Stdout, "\nStacks (") || !strings.Contains(rep.Stdout, " (syscall.connect)\n") ||
		!strings.Contains(rep.Stdout, "/where/where.go:31 (where.fetchQuote)\n") {
		t.Errorf("nettrap report --stacks: exit %d, want 1 (the log holds blocked attempts) and the stacks, the standard library's frames too:\n%s%s", rep.Code, rep.Stdout, rep.Stderr)
	}
	queries := 0
	for _, r := range harness.ReadAudit(t, logs[0]) {
		if r.Lookup != "" {
			queries++
		}
	}
	if wantRow := fmt.Sprintf(" %d queries\n", queries); queries < 2 || !strings.Contains(pkgOut["lookup"], wantRow) {
		t.Errorf("the log has %d queries of the lookup; the summary's row does not count them:\n%s", queries, pkgOut["lookup"])
	}
}

// summaryBlocks are the summaries in out: from a headline that names an
// audit log to the totals line.
func summaryBlocks(out string) []string {
	var blocks []string
	var cur []string
	for line := range strings.Lines(out) {
		switch {
		case strings.HasPrefix(line, "nettrap: ") && strings.Contains(line, "; audit log "):
			cur = []string{line}
		case cur != nil:
			cur = append(cur, line)
			if strings.HasPrefix(line, "nettrap: total: ") {
				blocks = append(blocks, strings.Join(cur, ""))
				cur = nil
			}
		}
	}
	return blocks
}
