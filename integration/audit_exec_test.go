package integration

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nettrap/nettrap/integration/internal/fakehost"
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
	exec := nettrapBin(t) + " --mode=audit"
	out, code := goCmd(t, fixtureRoot(t), goEnv("TMPDIR="+tmp), "test", "-count=1", "-exec", exec, "./where", "./initleak")
	if code != 0 {
		t.Fatalf("go test exit %d, want 0 (audit mode fails nothing)\n%s", code, out)
	}
	said := linesWithPrefix(out, "nettrap: audit mode: the findings of this go test run are in ")
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
	rep := runIn(t, tmp, goEnv(), nettrapBin(t), "report", logs[0])
	if rep.code != 0 || !strings.Contains(rep.stdout, "TestDirect") {
		t.Errorf("nettrap report on the log: exit %d\n%s%s", rep.code, rep.stdout, rep.stderr)
	}

	// No finding: nothing said, no log.
	clean := t.TempDir()
	out, code = goCmd(t, fixtureRoot(t), goEnv("TMPDIR="+clean), "test", "-count=1", "-exec", exec, "./clean")
	logs, _ = filepath.Glob(filepath.Join(clean, "nettrap-audit-*", "*"))
	if code != 0 || strings.Contains(out, "nettrap:") || len(logs) != 0 {
		t.Errorf("a run with no finding: exit %d, files %q, output:\n%s", code, logs, out)
	}
}
