package integration

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nettrap/nettrap/ghactions"
	"github.com/nettrap/nettrap/integration/internal/sandbox"
	"github.com/nettrap/nettrap/report"
)

// TestPackageFromAnyDir: a test binary run by hand names its package by
// import path in the audit log, the summary and the annotations, from
// whatever directory it runs in (the go command runs it in the package's
// source directory; a person anywhere).
func TestPackageFromAnyDir(t *testing.T) {
	sandbox.Require(t)
	nettrap := nettrapBin(t)
	bin := filepath.Join(buildFixtures(t, "argv"), "argv.test")
	const pkg = fixtureModule + "/argv"
	for _, dir := range []string{"/", t.TempDir(), filepath.Join(fixtureRoot(t), "argv")} {
		t.Run(dir, func(t *testing.T) {
			log := auditPath(t)
			run := runIn(t, dir, goEnv(), nettrap, "--audit-log", log, "--",
				bin, "-dial", "-marked", "-test.run=^(TestDial|TestMarked)$")
			if run.code != 1 {
				t.Fatalf("exit %d, want 1 (TestDial denied)\nstdout:\n%s\nstderr:\n%s", run.code, run.stdout, run.stderr)
			}
			got := map[string]string{} // decision -> package
			for _, r := range readRunAudit(t, log) {
				got[r.Decision] = r.Package
			}
			if got["denied"] != pkg || got["stale-marker"] != pkg {
				t.Errorf("audit records name packages %q, want %q", got, pkg)
			}
			rep := runIn(t, dir, goEnv(), nettrap, "report", "--format", "json", log)
			var s report.Summary
			// Exit 1: the log holds a blocked attempt.
			if err := json.Unmarshal([]byte(rep.stdout), &s); err != nil || rep.code != 1 {
				t.Fatalf("nettrap report: exit %d, %v\n%s%s", rep.code, err, rep.stdout, rep.stderr)
			}
			if len(s.Blocked) != 1 || s.Blocked[0].Package != pkg || len(s.Stale) != 1 || s.Stale[0].Package != pkg {
				t.Errorf("summary rows: blocked %+v, stale %+v; want package %q", s.Blocked, s.Stale, pkg)
			}
			text := runIn(t, dir, goEnv(), nettrap, "report", log)
			if !strings.Contains(text.stdout, pkg) {
				t.Errorf("text summary does not name %q:\n%s", pkg, text.stdout)
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
