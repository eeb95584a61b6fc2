package integration

import (
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/nettrap/nettrap/integration/internal/fakehost"
	"github.com/nettrap/nettrap/integration/internal/sandbox"
	"github.com/nettrap/nettrap/integration/internal/victimbuild"
	"github.com/nettrap/nettrap/policy"
)

// sealedLine is the denial of a marked test's connect under --sealed: it
// says the marker was ignored.
func sealedLine(port int, test string) *regexp.Regexp {
	return regexp.MustCompile(ext("connect tcp", port, test).String() + regexp.QuoteMeta(": "+policy.MarkerIgnored))
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
			got := outcomeOf(t, m, run.stdout, fixtureModule+"/seq")
			if errs := diffOutcome(got, want, m.name == "quiet"); len(errs) > 0 {
				t.Errorf("%s\noutput:\n%s", strings.Join(errs, "\n"), run.stdout)
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
	nettrap := victimbuild.Nettrap(t)
	goTest := []string{"go", "test", "-json", "-count=1", "./seq"}
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, log string) (stdout string, code int)
	}{
		{"exec", func(t *testing.T, log string) (string, int) {
			return goCmd(t, fixtureRoot(t), goEnv("NETTRAP_SEALED=1", "NETTRAP_AUDIT_LOG="+log),
				slices.Concat([]string{"test", "-exec", nettrap}, goTest[2:])...)
		}},
		{"nettrap-go-test", func(t *testing.T, log string) (string, int) {
			run := runIn(t, fixtureRoot(t), goEnv(), nettrap, slices.Concat([]string{"--sealed", "--audit-log", log, "--"}, goTest)...)
			return run.stdout, run.code
		}},
		{"hub", func(t *testing.T, log string) (string, int) {
			run := runIn(t, fixtureRoot(t), goEnv(), nettrap, "--sealed", "--audit-log", log, "--", "sh", "-c", strings.Join(goTest, " "))
			return run.stdout, run.code
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eps := fixtureEndpoints()
			h := fakehost.Start(t, eps...)
			mark := h.Mark()
			log := auditPath(t)
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
// a marked test, no allowed marked attempt and no stale marker.
func checkSealedAudit(t *testing.T, log string) {
	t.Helper()
	var denied bool
	for _, r := range readRunAudit(t, log) {
		switch {
		case r.Decision == "allowed" || r.Decision == "stale-marker":
			t.Errorf("under --sealed: %+v", r)
		case r.Decision == "denied" && r.Test == "TestMarked":
			denied = r.Marked && strings.Contains(r.Reason, policy.MarkerIgnored)
		}
	}
	if !denied {
		t.Errorf("no marked denial of TestMarked in the audit log %s", log)
	}
}

// TestSealedRefusesAllowTest: --sealed with --allow-test (or its variable)
// asks for two contradictory things: nettrap refuses to run.
func TestSealedRefusesAllowTest(t *testing.T) {
	nettrap := victimbuild.Nettrap(t)
	for _, tc := range []struct {
		name string
		env  []string
		args []string
	}{
		{"flags", nil, []string{"--sealed", "--allow-test", "^TestMarked$", "--", "true"}},
		{"variables", []string{"NETTRAP_SEALED=1", "NETTRAP_ALLOW_TEST=^TestMarked$"}, []string{"--", "true"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := runIn(t, t.TempDir(), goEnv(tc.env...), nettrap, tc.args...)
			if run.code != 125 || !strings.Contains(run.stderr, "--sealed with --allow-test") {
				t.Errorf("exit %d, want 125 with the reason\nstderr: %s", run.code, run.stderr)
			}
		})
	}
}
