package gocmd

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/nettrap/nettrap/integration/internal/fakehost"
	"github.com/nettrap/nettrap/integration/internal/harness"
	"github.com/nettrap/nettrap/integration/internal/lab"
	"github.com/nettrap/nettrap/integration/internal/runmod"
	"github.com/nettrap/nettrap/integration/internal/sandbox"
)

// The main-package fixture module (testdata/mainpkg): cmd/plain's
// TestLeak dials 203.0.113.7:443 and swallows the error; cmd/withcgo
// uses cgo. A main package's test binary carries the package's own path
// in its build info, not "<path>.test".
const mainpkgMod = "example.com/mainpkg/"

func mainpkgDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.Abs(filepath.Join("testdata", "mainpkg"))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestMainPackageTests: main packages' tests start under nettrap, however
// they are built and run, and a leaky one is failed with its line and
// attributed to its package and test.
func TestMainPackageTests(t *testing.T) {
	lab.SlowUnderOuter(t, "58 s")
	sandbox.Require(t)
	nettrap := harness.Nettrap(t)
	ep := tcpEP(fxExternal, 443)
	h := fakehost.Start(t, ep)
	goTest := func(flags ...string) []string {
		return append(append([]string{"go", "test", "-count=1"}, flags...), "./...")
	}
	for _, c := range []struct {
		name string
		argv []string // after nettrap's own flags; nil: `go test -exec nettrap`
	}{
		{"plain", goTest()},
		{"stripped", goTest("-ldflags=-s -w")},
		{"trimpath", goTest("-trimpath")},
		{"cover", goTest("-cover")},
		{"race", goTest("-race")},
		{"exec", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			log := harness.AuditPath(t)
			mark := h.Mark()
			var run harness.Run
			if c.argv == nil {
				run = harness.RunIn(t, mainpkgDir(t), runmod.Env("NETTRAP_AUDIT_LOG="+log), "go", "test", "-count=1", "-exec", nettrap, "./...")
			} else {
				run = harness.RunIn(t, mainpkgDir(t), runmod.Env(), nettrap, append([]string{"--audit-log", log, "--"}, c.argv...)...)
			}
			out := run.Stdout + run.Stderr
			for _, want := range []string{
				"--- FAIL: TestLeak",
				"Outbound network blocked: connect tcp 203.0.113.7:443 (external) during TestLeak",
				"FAIL\t" + mainpkgMod + "cmd/plain",
				"ok  \t" + mainpkgMod + "cmd/withcgo",
			} {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			if run.Code != 1 {
				t.Errorf("exit %d, want 1:\n%s", run.Code, out)
			}
			assertLeakAttributed(t, log, mainpkgMod+"cmd/plain")
			harness.AssertNothingArrived(t, h, mark, ep)
		})
	}
}

// TestMainPackageTestBinaryByHand: `go test -c` of a main package, run by
// hand under a name of the user's choosing, is a test binary to nettrap.
func TestMainPackageTestBinaryByHand(t *testing.T) {
	sandbox.Require(t)
	nettrap := harness.Nettrap(t)
	ep := tcpEP(fxExternal, 443)
	h := fakehost.Start(t, ep)
	bin := filepath.Join(t.TempDir(), "plain-tests")
	if run := harness.RunIn(t, mainpkgDir(t), runmod.Env(), "go", "test", "-c", "-o", bin, "./cmd/plain"); run.Code != 0 {
		t.Fatalf("go test -c: exit %d\n%s", run.Code, run.Stderr)
	}
	log := harness.AuditPath(t)
	mark := h.Mark()
	run := harness.RunIn(t, t.TempDir(), runmod.Env(), nettrap, "--audit-log", log, "--", bin, "-test.run=TestLeak|TestAdd")
	if run.Code != 1 || !strings.Contains(run.Stdout+run.Stderr, "Outbound network blocked: connect tcp 203.0.113.7:443 (external) during TestLeak") {
		t.Errorf("exit %d, want 1 with TestLeak's line:\n%s%s", run.Code, run.Stdout, run.Stderr)
	}
	assertLeakAttributed(t, log, mainpkgMod+"cmd/plain")
	harness.AssertNothingArrived(t, h, mark, ep)
}

// assertLeakAttributed: the audit log has TestLeak's denied connect to
// 203.0.113.7:443, attributed to pkg.
func assertLeakAttributed(t *testing.T, log, pkg string) {
	t.Helper()
	for _, r := range readRunAudit(t, log) {
		if r.Dest == "203.0.113.7:443" && r.Decision == "denied" && r.Test == "TestLeak" && r.Package == pkg {
			return
		}
	}
	t.Errorf("no denied record of %s TestLeak to 203.0.113.7:443 in %s", pkg, log)
}
