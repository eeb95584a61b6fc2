package gocmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nettrap/nettrap/integration/internal/fakehost"
	"github.com/nettrap/nettrap/integration/internal/harness"
	"github.com/nettrap/nettrap/integration/internal/runmod"
	"github.com/nettrap/nettrap/policy"
)

// TestLogMarkerOldGoLine: a module whose go line is 1.22 marks its test
// with t.Log("nettrap:network"): go vet passes (t.Attr in its place
// does not, which the control shows), and under nettrap -- go test the
// marked test's connect is allowed, audited with the marker's reason,
// and arrives.
func TestLogMarkerOldGoLine(t *testing.T) {
	dir, err := filepath.Abs(filepath.Join("testdata", "oldgo"))
	if err != nil {
		t.Fatal(err)
	}
	if vet := runModAt(t, dir, nil, runmod.Env(), "go", "vet", "./..."); vet.Code != 0 {
		t.Errorf("go vet exit %d, want 0:\n%s%s", vet.Code, vet.Stdout, vet.Stderr)
	}
	checkAttrRefused(t, dir)

	ep := tcpEP(fxExternal, 4201)
	h := fakehost.Start(t, ep)
	mark := h.Mark()
	log := harness.AuditPath(t)
	run := runModAt(t, dir, nil, runmod.Env(), harness.Nettrap(t), "--audit-log", log, "--", "go", "test", "-count=1", "-v", "./...")
	if run.Code != 0 || !strings.Contains(run.Stdout, "--- PASS: TestLive") {
		t.Errorf("exit %d, want 0 with TestLive passing:\n%s%s", run.Code, run.Stdout, run.Stderr)
	}
	var allowed []harness.AuditRecord
	for _, r := range harness.ReadAudit(t, log) {
		if r.Syscall != "" {
			allowed = append(allowed, r)
		}
	}
	if len(allowed) != 1 || allowed[0].Decision != "allowed" || allowed[0].Reason != policy.ReasonMarked ||
		!strings.HasSuffix(allowed[0].Dest, ":4201") {
		t.Errorf("audit records of attempts %+v, want one connect to :4201 allowed as a marked test's", allowed)
	}
	checkArrivals(t, h, mark, []fakehost.Endpoint{ep}, []arrival{{ep, "TestLive"}})
}

// checkAttrRefused: the control. With t.Attr in place of the logged
// marker, go vet refuses the module for its go line: the fixture's
// line is what makes the logged marker necessary.
func checkAttrRefused(t *testing.T, dir string) {
	t.Helper()
	copyDir := t.TempDir()
	for _, name := range []string{"go.mod", "oldgo_test.go"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		b = []byte(strings.Replace(string(b), `t.Log("nettrap:network")`, `t.Attr("nettrap", "network")`, 1))
		if err := os.WriteFile(filepath.Join(copyDir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	vet := runModAt(t, copyDir, nil, runmod.Env(), "go", "vet", "./...")
	if vet.Code == 0 || !strings.Contains(vet.Stderr, "requires go1.25 or later") {
		t.Errorf("control: go vet of the module with t.Attr exit %d, want it refused for its go line:\n%s%s", vet.Code, vet.Stdout, vet.Stderr)
	}
}
