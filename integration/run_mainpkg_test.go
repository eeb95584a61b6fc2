package integration

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/nettrap/nettrap/integration/internal/fakehost"
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
	slowUnderOuter(t, "58 s")
	sandbox.Require(t)
	nettrap := nettrapBin(t)
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
			log := auditPath(t)
			mark := h.Mark()
			var run nettrapRun
			if c.argv == nil {
				run = runIn(t, mainpkgDir(t), runModEnv("NETTRAP_AUDIT_LOG="+log), "go", "test", "-count=1", "-exec", nettrap, "./...")
			} else {
				run = runIn(t, mainpkgDir(t), runModEnv(), nettrap, append([]string{"--audit-log", log, "--"}, c.argv...)...)
			}
			out := run.stdout + run.stderr
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
			if run.code != 1 {
				t.Errorf("exit %d, want 1:\n%s", run.code, out)
			}
			assertLeakAttributed(t, log, mainpkgMod+"cmd/plain")
			assertNothingArrived(t, h, mark, ep)
		})
	}
}

// TestMainPackageTestBinaryByHand: `go test -c` of a main package, run by
// hand under a name of the user's choosing, is a test binary to nettrap.
func TestMainPackageTestBinaryByHand(t *testing.T) {
	sandbox.Require(t)
	nettrap := nettrapBin(t)
	ep := tcpEP(fxExternal, 443)
	h := fakehost.Start(t, ep)
	bin := filepath.Join(t.TempDir(), "plain-tests")
	if run := runIn(t, mainpkgDir(t), runModEnv(), "go", "test", "-c", "-o", bin, "./cmd/plain"); run.code != 0 {
		t.Fatalf("go test -c: exit %d\n%s", run.code, run.stderr)
	}
	log := auditPath(t)
	mark := h.Mark()
	run := runIn(t, t.TempDir(), runModEnv(), nettrap, "--audit-log", log, "--", bin, "-test.run=TestLeak|TestAdd")
	if run.code != 1 || !strings.Contains(run.stdout+run.stderr, "Outbound network blocked: connect tcp 203.0.113.7:443 (external) during TestLeak") {
		t.Errorf("exit %d, want 1 with TestLeak's line:\n%s%s", run.code, run.stdout, run.stderr)
	}
	assertLeakAttributed(t, log, mainpkgMod+"cmd/plain")
	assertNothingArrived(t, h, mark, ep)
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
