package gocmd

import (
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/nettrap/nettrap/integration/internal/fakehost"
	"github.com/nettrap/nettrap/integration/internal/harness"
	"github.com/nettrap/nettrap/integration/internal/sandbox"
)

// streamEndpoints are what the leftover and failfast fixtures dial.
func streamEndpoints() []fakehost.Endpoint {
	return []fakehost.Endpoint{tcpEP(fxExternal, 4001), tcpEP(fxExternal, 4002), tcpEP(fxExternal, 4003), tcpEP(fxExternal, 4004)}
}

// rawRecords reads an audit log as generic objects, so that a test can
// tell a field left out from a zero one.
func rawRecords(t *testing.T, path string) []map[string]any {
	t.Helper()
	return harness.ReadJSONL[map[string]any](t, path)
}

// TestLeftoverGoroutine: a goroutine of TestA dials during TestB. Its
// creators (read from the runtime, which keeps an exited creator's stack
// under the GODEBUG=tracebackancestors nettrap gives test binaries) say
// TestA started it: the line names TestA, which had ended, TestB passes,
// and the package fails. With the creators' stacks turned off
// (tracebackancestors=0) the chain ends at TestA's exited goroutine: the
// line names the goroutine and the go statement's function, and says no
// running test is known to have started it. Nothing guesses from timing:
// the record has no after_test, the summary no hint. TestOdd's bad
// marker fails it, is in the audit log without the fields of an attempt,
// and in the summary.
func TestLeftoverGoroutine(t *testing.T) {
	sandbox.Require(t)
	bins := buildFixtures(t, "leftover")
	for _, tc := range []struct {
		godebug string
		line    string
		record  map[string]any
	}{
		{"", `from a goroutine started by TestA at leftover/leftover_test\.go:\d+, which had ended`,
			map[string]any{"started_by": "TestA", "started_by_ended": true, "unowned": nil}},
		{"tracebackancestors=0", `in a goroutine of leftover\.TestA\.func1 \(started in leftover\.TestA\) that no running test is known to have started`,
			map[string]any{"started_by": nil, "started_by_ended": nil, "unowned": true}},
	} {
		t.Run("GODEBUG="+tc.godebug, func(t *testing.T) {
			t.Setenv("GODEBUG", tc.godebug)
			leftoverRun(t, bins, tc.line, tc.record)
		})
	}
}

// leftoverRun runs package leftover's binary and checks the leftover
// goroutine's line (after its location) and record fields (nil: absent).
func leftoverRun(t *testing.T, bins, line string, fields map[string]any) {
	eps := streamEndpoints()
	h := fakehost.Start(t, eps...)
	mark := h.Mark()
	log := harness.AuditPath(t)
	run := runConfined(t, filepath.Join(bins, "leftover.test"), "leftover", []string{"--audit-log", log}, []string{"-test.v=true"})
	checkRun(t, run, expectation{code: 1})
	want := expectation{
		results: res("TestA", "PASS", "TestB", "PASS", "TestOdd", "FAIL", "TestLast", "PASS"),
		lines: map[string][]*regexp.Regexp{
			"":        {regexp.MustCompile(`^Outbound network blocked: connect tcp (203\.0\.113\.7|\[::ffff:203\.0\.113\.7\]):4001 \(external\) during TestB at fx/fx\.go:\d+ \(fx\.Dial(, called from leftover/leftover_test\.go:\d+)?\), ` + line + `$`)},
			"TestOdd": {note(`unknown value "yes" of the "nettrap" attribute`)},
		},
		final: "FAIL",
	}
	if errs := diffOutcome(verboseOutcome(run.Stdout), want, false); len(errs) > 0 {
		t.Errorf("%s\noutput:\n%s", strings.Join(errs, "\n"), run.Stdout)
	}
	checkArrivals(t, h, mark, eps, nil)

	var denied, bad map[string]any
	for _, r := range rawRecords(t, log) {
		switch {
		case r["decision"] == "denied" && r["dest"] != nil && strings.HasSuffix(r["dest"].(string), ":4001"):
			denied = r
		case r["decision"] == "bad-marker":
			bad = r
		}
	}
	if denied == nil || bad == nil {
		t.Fatalf("audit log lacks the denial or the bad marker: %v, %v", denied, bad)
	}
	if denied["test"] != "TestB" {
		t.Errorf("denial during %v, want during TestB (the test running then)", denied["test"])
	}
	for k, v := range fields {
		if got, ok := denied[k]; v == nil && ok || v != nil && got != v {
			t.Errorf("denial record's %s = %v, want %v: %v", k, got, v, denied)
		}
	}
	for _, absent := range []string{"after_test", "after_ms"} {
		if _, ok := denied[absent]; ok {
			t.Errorf("denial record has %q, a guess from timing: %v", absent, denied)
		}
	}
	if bad["test"] != "TestOdd" || bad["marker_value"] != "yes" {
		t.Errorf("bad-marker record %v, want test TestOdd, marker_value yes", bad)
	}
	for _, absent := range []string{"pid", "tid", "syscall", "dest"} {
		if _, ok := bad[absent]; ok {
			t.Errorf("bad-marker record has %q, which does not apply: %v", absent, bad)
		}
	}

	rep := harness.RunIn(t, t.TempDir(), harness.GoEnv(), harness.Nettrap(t), "report", log)
	if rep.Code != 1 { // the log holds a blocked attempt and a bad marker
		t.Fatalf("nettrap report: exit %d\n%s%s", rep.Code, rep.Stdout, rep.Stderr)
	}
	for _, w := range []string{"Bad markers", "TestOdd", `"yes"`, "1 bad marker"} {
		if !strings.Contains(rep.Stdout, w) {
			t.Errorf("summary lacks %q:\n%s", w, rep.Stdout)
		}
	}
	if strings.Contains(rep.Stdout, "hint") {
		t.Errorf("summary hints from timing:\n%s", rep.Stdout)
	}
}

// TestFailFast: under -test.failfast, a test nettrap fails stops the run
// as a failure the binary knows of would: TestSecond and TestThird do not
// run (TestThird, marked, would reach the fake host), the package fails,
// and nettrap exits 1, in every output mode and with every spelling.
func TestFailFast(t *testing.T) {
	sandbox.Require(t)
	bins := buildFixtures(t, "failfast")
	bin := filepath.Join(bins, "failfast.test")
	first := ext("connect tcp", 4002, "TestFirst")
	stopped := note("-test.failfast: TestFirst failed, so nettrap stopped the test binary as TestSecond started: later tests did not run")
	want := expectation{
		results: res("TestFirst", "FAIL"),
		lines:   map[string][]*regexp.Regexp{"TestFirst": {first}, "": {stopped}},
		final:   "FAIL", code: 1,
	}
	for _, ff := range []string{"-test.failfast", "-test.failfast=true", "--test.failfast"} {
		for _, m := range outputModes {
			t.Run(ff+"/"+m.name, func(t *testing.T) {
				eps := streamEndpoints()
				h := fakehost.Start(t, eps...)
				mark := h.Mark()
				run := runConfined(t, bin, "failfast", nil, slices.Concat(m.flags, []string{ff}))
				checkRun(t, run, want)
				got := outcomeOf(t, m, run.Stdout, fixtureModule+"/failfast")
				if errs := diffOutcome(got, want, m.name == "quiet"); len(errs) > 0 {
					t.Errorf("%s\noutput:\n%s", strings.Join(errs, "\n"), run.Stdout)
				}
				if strings.Contains(run.Stdout, "RUN   TestSecond") || strings.Contains(run.Stdout, "TestThird") {
					t.Errorf("a test after the failed one shows:\n%s", run.Stdout)
				}
				checkArrivals(t, h, mark, eps, nil)
			})
		}
	}
	t.Run("without failfast", func(t *testing.T) {
		eps := streamEndpoints()
		h := fakehost.Start(t, eps...)
		mark := h.Mark()
		run := runConfined(t, bin, "failfast", nil, []string{"-test.v=true", "-test.failfast=false"})
		all := expectation{
			results: res("TestFirst", "FAIL", "TestSecond", "FAIL", "TestThird", "PASS"),
			lines: map[string][]*regexp.Regexp{"TestFirst": {first},
				"TestSecond": {ext("connect tcp", 4003, "TestSecond")}},
			final: "FAIL", code: 1,
		}
		checkRun(t, run, all)
		if errs := diffOutcome(verboseOutcome(run.Stdout), all, false); len(errs) > 0 {
			t.Errorf("%s\noutput:\n%s", strings.Join(errs, "\n"), run.Stdout)
		}
		checkArrivals(t, h, mark, eps, []arrival{{tcpEP(fxExternal, 4004), "TestThird"}})
	})
}

// TestFailFastGoTestJSON: `go test -json -failfast` with nettrap as -exec,
// and under `nettrap -- go test` (inner nettraps, the outer supervising),
// gets valid test2json with no event of the tests that must not run.
func TestFailFastGoTestJSON(t *testing.T) {
	sandbox.Require(t)
	nettrap := harness.Nettrap(t)
	goTest := []string{"test", "-json", "-count=1", "-failfast"}
	t.Run("exec", func(t *testing.T) {
		checkFailFastJSON(t, func() (string, int) {
			return goCmd(t, fixtureRoot(t), harness.GoEnv(), slices.Concat(goTest, []string{"-exec", nettrap, "./failfast"})...)
		})
	})
	t.Run("outer", func(t *testing.T) {
		checkFailFastJSON(t, func() (string, int) {
			run := harness.RunIn(t, fixtureRoot(t), harness.GoEnv(), nettrap, slices.Concat([]string{"--", "go"}, goTest, []string{"./failfast"})...)
			// TestSecond may have made its attempt before it was stopped:
			// the audit trail has it then.
			if !regexp.MustCompile(`failfast +TestFirst +(fx/fx\.go:\d+ \(fx\.Dial\) +)?connect tcp +203\.0\.113\.7:4002 `).MatchString(run.Stderr) {
				t.Errorf("summary on stderr lacks TestFirst's attempt:\n%s", run.Stderr)
			}
			return run.Stdout, run.Code
		})
	})
}

func checkFailFastJSON(t *testing.T, goTest func() (string, int)) {
	t.Helper()
	eps := streamEndpoints()
	h := fakehost.Start(t, eps...)
	mark := h.Mark()
	out, code := goTest()
	if code != 1 {
		t.Errorf("go test exit %d, want 1", code)
	}
	evs := decodeJSON(t, out)
	got := fromEvents(evs, fixtureModule+"/failfast")
	want := expectation{
		results: res("TestFirst", "FAIL"),
		lines: map[string][]*regexp.Regexp{"TestFirst": {ext("connect tcp", 4002, "TestFirst")},
			"": {note("-test.failfast: TestFirst failed")}},
		final: "FAIL",
	}
	if errs := diffOutcome(got, want, false); len(errs) > 0 {
		t.Errorf("%s\noutput:\n%s", strings.Join(errs, "\n"), out)
	}
	for _, e := range evs {
		if e.Test == "TestSecond" || e.Test == "TestThird" {
			t.Errorf("event of a test that must not run: %+v", e)
		}
	}
	checkArrivals(t, h, mark, eps, nil)
}
