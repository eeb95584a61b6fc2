package gocmd

import (
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/audit"
	"github.com/nettrap/nettrap/integration/internal/fakehost"
	"github.com/nettrap/nettrap/integration/internal/harness"
	"github.com/nettrap/nettrap/integration/internal/lab"
	"github.com/nettrap/nettrap/integration/internal/sandbox"
	"github.com/nettrap/nettrap/integration/internal/victimbuild"
)

// sealedLine is the denial of a marked test's connect under --sealed: it
// says the marker was ignored.
func sealedLine(port int, test string) *regexp.Regexp {
	return regexp.MustCompile(ext("connect tcp", port, test).String() + where + regexp.QuoteMeta(": "+audit.ReasonMarkerIgnored))
}

// sealedSeqExpect is package seq under --sealed: the marked tests (and the
// subtests and cleanup of a marked test) fail with the marker-ignored line,
// nothing reaches a fake host, and no marker is called stale.
func sealedSeqExpect() expectation {
	e := seqExpect(false)
	maps.Copy(e.results, res("TestMarked", "FAIL", "TestMarkedParent", "FAIL",
		"TestMarkedParent/a", "FAIL", "TestMarkedParent/b", "FAIL"))
	e.lines["TestMarked"] = []*regexp.Regexp{sealedLine(1008, "TestMarked")}
	e.lines["TestMarkedParent/a"] = []*regexp.Regexp{sealedLine(1010, "TestMarkedParent/a")}
	e.lines["TestMarkedParent/b"] = []*regexp.Regexp{sealedLine(1011, "TestMarkedParent/b")}
	e.lines["TestMarkedParent"] = []*regexp.Regexp{sealedLine(1012, "TestMarkedParent")}
	delete(e.lines, "")
	e.arrivals = nil
	return e
}

// TestSealedBinary runs package seq's binary under `nettrap --sealed`, in
// every output mode: the marked tests fail and nothing arrives.
func TestSealedBinary(t *testing.T) {
	sandbox.Require(t)
	bins := buildFixtures(t, "seq")
	want := sealedSeqExpect()
	for _, m := range outputModes {
		t.Run(m.name, func(t *testing.T) {
			eps := fixtureEndpoints()
			h := fakehost.Start(t, eps...)
			mark := h.Mark()
			run := runConfined(t, filepath.Join(bins, "seq.test"), "seq", []string{"--sealed"}, m.flags)
			checkRun(t, run, want)
			got := outcomeOf(t, m, run.Stdout, fixtureModule+"/seq")
			if errs := diffOutcome(got, want, m.name == "quiet"); len(errs) > 0 {
				t.Errorf("%s\noutput:\n%s", strings.Join(errs, "\n"), run.Stdout)
			}
			checkArrivals(t, h, mark, eps, nil)
		})
	}
}

// TestSealedGoTest runs package seq with go test -json under --sealed in
// the three ways a run can be sealed: NETTRAP_SEALED=1 with -exec (each
// test binary's nettrap decides), `nettrap --sealed -- go test` (the
// outer passes sealed on to every inner nettrap) and `nettrap --sealed --
// sh -c 'go test'` (the outer decides, the inners only name tests).
func TestSealedGoTest(t *testing.T) {
	sandbox.Require(t)
	nettrap := harness.Nettrap(t)
	goTest := []string{"go", "test", "-json", "-count=1", "./seq"}
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, log string) (stdout string, code int)
	}{
		{"exec", func(t *testing.T, log string) (string, int) {
			out, code := goCmd(t, fixtureRoot(t), harness.GoEnv("NETTRAP_SEALED=1", "NETTRAP_AUDIT_LOG="+log),
				slices.Concat([]string{"test", "-exec", nettrap}, goTest[2:])...)
			return lab.DropSealedNotice(lab.DropNotice(out)), code
		}},
		{"nettrap-go-test", func(t *testing.T, log string) (string, int) {
			run := harness.RunIn(t, fixtureRoot(t), harness.GoEnv(), nettrap, slices.Concat([]string{"--sealed", "--audit-log", log, "--"}, goTest)...)
			return run.Stdout, run.Code
		}},
		{"hub", func(t *testing.T, log string) (string, int) {
			run := harness.RunIn(t, fixtureRoot(t), harness.GoEnv(), nettrap, "--sealed", "--audit-log", log, "--", "sh", "-c", strings.Join(goTest, " "))
			return run.Stdout, run.Code
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eps := fixtureEndpoints()
			h := fakehost.Start(t, eps...)
			mark := h.Mark()
			log := harness.AuditPath(t)
			out, code := tc.run(t, log)
			if code != 1 {
				t.Errorf("exit %d, want 1", code)
			}
			got := fromEvents(decodeJSON(t, out), fixtureModule+"/seq")
			if errs := diffOutcome(got, sealedSeqExpect(), false); len(errs) > 0 {
				t.Errorf("%s\noutput:\n%s", strings.Join(errs, "\n"), out)
			}
			checkArrivals(t, h, mark, eps, nil)
			checkSealedAudit(t, log)
		})
	}
}

// checkSealedAudit: the audit log has TestMarked's attempt as a denial of
// a marked test, TestBogusAttr's bad marker as in the default mode, no
// allowed marked attempt and no stale marker.
func checkSealedAudit(t *testing.T, log string) {
	t.Helper()
	var denied, bad bool
	for _, r := range readRunAudit(t, log) {
		switch {
		case r.Decision == "allowed" || r.Decision == "stale-marker":
			t.Errorf("under --sealed: %+v", r)
		case r.Decision == "denied" && r.Test == "TestMarked":
			denied = r.Marked && strings.Contains(r.Reason, audit.ReasonMarkerIgnored)
		case r.Decision == "bad-marker":
			bad = r.Test == "TestBogusAttr" && r.Package == fixtureModule+"/seq" && r.MarkerValue == "bogus"
			if !bad {
				t.Errorf("under --sealed, bad marker record %+v, want TestBogusAttr of %s/seq, value bogus", r, fixtureModule)
			}
		}
	}
	if !denied {
		t.Errorf("no marked denial of TestMarked in the audit log %s", log)
	}
	if !bad {
		t.Errorf("no bad marker of TestBogusAttr in the audit log %s", log)
	}
}

// TestSealedRefusesAllowTest: --sealed with --allow-test (or its variable)
// asks for two contradictory things: nettrap refuses to run.
func TestSealedRefusesAllowTest(t *testing.T) {
	nettrap := harness.Nettrap(t)
	for _, tc := range []struct {
		name string
		env  []string
		args []string
	}{
		{"flags", nil, []string{"--sealed", "--allow-test", "^TestMarked$", "--", "true"}},
		{"variables", []string{"NETTRAP_SEALED=1", "NETTRAP_ALLOW_TEST=^TestMarked$"}, []string{"--", "true"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := harness.RunIn(t, t.TempDir(), harness.GoEnv(tc.env...), nettrap, tc.args...)
			if run.Code != 125 || !strings.Contains(run.Stderr, "under --sealed no test may use the network by name") {
				t.Errorf("exit %d, want 125 with the reason\nstderr: %s", run.Code, run.Stderr)
			}
		})
	}
}

// TestForgedInnerRefused replays issue 8's forged inner nettrap inside a
// generic run: a confined process connects to the hub, hands the socket to
// a child and execs nettrap; the child registers and would answer
// "marked". The registration must be refused and the dial denied, in both
// modes.
func TestForgedInnerRefused(t *testing.T) {
	sandbox.Require(t)
	nettrap := harness.Nettrap(t)
	forge := victimbuild.Build(t, "github.com/nettrap/nettrap/integration/internal/forgehub")
	for _, sealed := range []bool{false, true} {
		t.Run(map[bool]string{false: "default", true: "sealed"}[sealed], func(t *testing.T) {
			ep := tcpEP(fxExternal, 3101)
			h := fakehost.Start(t, ep)
			mark := h.Mark()
			fifo := filepath.Join(t.TempDir(), "outcome")
			if err := unix.Mkfifo(fifo, 0o600); err != nil {
				t.Fatal(err)
			}
			args := []string{"--", forge, "start", nettrap, "3101"}
			if sealed {
				args = append([]string{"--sealed"}, args...)
			}
			run := harness.RunIn(t, t.TempDir(), harness.GoEnv("FORGE_FIFO="+fifo), nettrap, args...)
			for _, want := range []string{
				// The connect is made by the outer nettrap for the
				// confined process (a unix connect: issue 19), so the
				// hub knows the process by its first write: the
				// answerer's, which does not run nettrap. (A connect
				// the kernel made would name the process that
				// connected, and the answerer's bytes would be
				// "written by another process than the one that
				// connected": hub's own tests.)
				"forgehub: the forged inner: refused: error",
				"nettrap: refused the registration of pid",
				"nettrap: Outbound network blocked: connect tcp 203.0.113.7:3101 (external) by pid",
				"forgehub: dial: dial tcp 203.0.113.7:3101: connect: operation not permitted",
			} {
				if !strings.Contains(run.Stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, run.Stderr)
				}
			}
			harness.AssertNothingArrived(t, h, mark, ep)
		})
	}
}
