package gocmd

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nettrap/nettrap/ghactions"
	"github.com/nettrap/nettrap/integration/internal/harness"
	"github.com/nettrap/nettrap/integration/internal/sandbox"
	"github.com/nettrap/nettrap/report"
)

// TestPackageFromAnyDir: a test binary run by hand names its package by
// import path in the audit log, the summary and the annotations, from
// whatever directory it runs in (the go command runs it in the package's
// source directory; a person anywhere).
func TestPackageFromAnyDir(t *testing.T) {
	sandbox.Require(t)
	nettrap := harness.Nettrap(t)
	bin := filepath.Join(buildFixtures(t, "argv"), "argv.test")
	const pkg = fixtureModule + "/argv"
	for _, dir := range []string{"/", t.TempDir(), filepath.Join(fixtureRoot(t), "argv")} {
		t.Run(dir, func(t *testing.T) {
			log := harness.AuditPath(t)
			run := harness.RunIn(t, dir, harness.GoEnv(), nettrap, "--audit-log", log, "--",
				bin, "-dial", "-marked", "-test.run=^(TestDial|TestMarked)$")
			if run.Code != 1 {
				t.Fatalf("exit %d, want 1 (TestDial denied)\nstdout:\n%s\nstderr:\n%s", run.Code, run.Stdout, run.Stderr)
			}
			got := map[string]string{} // decision -> package
			for _, r := range readRunAudit(t, log) {
				got[r.Decision] = r.Package
			}
			if got["denied"] != pkg || got["stale-marker"] != pkg {
				t.Errorf("audit records name packages %q, want %q", got, pkg)
			}
			rep := harness.RunIn(t, dir, harness.GoEnv(), nettrap, "report", "--format", "json", log)
			var s report.Summary
			// Exit 1: the log holds a blocked attempt.
			if err := json.Unmarshal([]byte(rep.Stdout), &s); err != nil || rep.Code != 1 {
				t.Fatalf("nettrap report: exit %d, %v\n%s%s", rep.Code, err, rep.Stdout, rep.Stderr)
			}
			if len(s.Blocked) != 1 || s.Blocked[0].Package != pkg || len(s.Stale) != 1 || s.Stale[0].Package != pkg {
				t.Errorf("summary rows: blocked %+v, stale %+v; want package %q", s.Blocked, s.Stale, pkg)
			}
			text := harness.RunIn(t, dir, harness.GoEnv(), nettrap, "report", log)
			if !strings.Contains(text.Stdout, pkg) {
				t.Errorf("text summary does not name %q:\n%s", pkg, text.Stdout)
			}
			var ann bytes.Buffer
			if err := ghactions.Annotate(&ann, &s); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(ann.String(), "of package "+pkg+"\n") {
				t.Errorf("annotation does not name %q:\n%s", pkg, ann.String())
			}
		})
	}
}
