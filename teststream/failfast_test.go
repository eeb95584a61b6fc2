package teststream

import (
	"regexp"
	"strings"
	"testing"
)

// elapsed normalizes the durations of synthesized reports, which are
// measured.
var elapsed = regexp.MustCompile(`\(\d+\.\d\ds\)`)

func normElapsed(s string) string { return elapsed.ReplaceAllString(s, "(D)") }

// failFastSession is a session under -failfast that counts stop calls.
func failFastSession(t *testing.T, scenario string, m Mode) (*session, *int) {
	s := newSession(t, scenario, m)
	stops := new(int)
	s.r.FailFast(func() { *stops++ })
	return s, stops
}

// A top-level test failed by a verdict: the next test's start stops the
// binary, nothing of it shows, and the package fails.
func TestFailFastTopLevel(t *testing.T) {
	note := "nettrap: -test.failfast: TestPass failed, so nettrap stopped the test binary as TestSkip started: later tests did not run\n"
	want := map[Mode]string{
		ModeVerbose: "=== RUN   TestPass\n    " + blocked + "\n    fixture_test.go:13: passing log\n--- FAIL: TestPass (D)\n" +
			note + "FAIL\n",
		ModeQuiet: "--- FAIL: TestPass (D)\n    " + blocked + "\n    fixture_test.go:13: passing log\n" + note + "FAIL\n",
	}
	for _, m := range allModes {
		s, stops := failFastSession(t, "allpass", m)
		s.upTo("=== RUN   TestPass")
		if !s.r.Fail("TestPass", blocked) {
			t.Fatal("Fail of a running test reported false")
		}
		got := s.finish()
		if *stops != 1 || !s.r.Stopped() || !s.r.Dropped("TestSkip") || s.r.Dropped("TestPass") {
			t.Errorf("mode %s: stop called %d times, Stopped %v, Dropped(TestSkip) %v; want once, true, true",
				modeFiles[m], *stops, s.r.Stopped(), s.r.Dropped("TestSkip"))
		}
		if strings.Contains(got, "TestSkip\n") || strings.Contains(got, "TestSubPass") {
			t.Errorf("mode %s: a test started after the stop shows:\n%s", modeFiles[m], got)
		}
		if m == ModeJSONFramed {
			checkJSON(t, got, blocked, "TestPass", "TestPass")
			continue
		}
		if normElapsed(got) != want[m] {
			t.Errorf("mode %s:\n%s", modeFiles[m], lineDiff([]byte(normElapsed(got)), []byte(want[m])))
		}
	}
}

// A subtest failed by a verdict: its parent does not start another
// subtest (the binary is stopped as it tries), and the parent, still open
// then, gets its --- FAIL report with the subtest's under it.
func TestFailFastSubtest(t *testing.T) {
	note := "nettrap: -test.failfast: TestSubPass/one failed, so nettrap stopped the test binary as TestSubPass/two started: later tests did not run\n"
	head := "=== RUN   TestPass\n    fixture_test.go:13: passing log\n--- PASS: TestPass (D)\n" +
		"=== RUN   TestSkip\n    fixture_test.go:21: not today\n--- SKIP: TestSkip (D)\n"
	want := map[Mode]string{
		ModeVerbose: head + "=== RUN   TestSubPass\n=== RUN   TestSubPass/one\n    " + blocked + "\n    fixture_test.go:47: one\n" +
			"--- FAIL: TestSubPass (D)\n    --- FAIL: TestSubPass/one (D)\n" + note + "FAIL\n",
		ModeQuiet: "--- FAIL: TestSubPass (D)\n    --- FAIL: TestSubPass/one (D)\n        " + blocked +
			"\n        fixture_test.go:47: one\n" + note + "FAIL\n",
	}
	for _, m := range allModes {
		s, stops := failFastSession(t, "allpass", m)
		s.upTo("=== RUN   TestSubPass/one")
		s.r.Fail("TestSubPass/one", blocked)
		got := s.finish()
		if *stops != 1 || !s.r.Dropped("TestSubPass/two") {
			t.Errorf("mode %s: stop called %d times, Dropped(TestSubPass/two) %v", modeFiles[m], *stops, s.r.Dropped("TestSubPass/two"))
		}
		if m == ModeJSONFramed {
			checkJSON(t, got, blocked, "TestSubPass/one", "TestSubPass/one", "TestSubPass")
			if strings.Contains(got, "RUN   TestSubPass/two") {
				t.Errorf("the dropped subtest shows:\n%s", got)
			}
			continue
		}
		if normElapsed(got) != want[m] {
			t.Errorf("mode %s:\n%s", modeFiles[m], lineDiff([]byte(normElapsed(got)), []byte(want[m])))
		}
	}
}

// Failures the binary knows of are its own business under -failfast, and a
// failed last test leaves nothing to stop: the output is unchanged.
func TestFailFastNoStop(t *testing.T) {
	for _, m := range allModes {
		s, stops := failFastSession(t, "basic", m)
		got := s.finish()
		if want := string(readGolden(t, "basic", m)); got != want || *stops != 0 {
			t.Errorf("mode %s: stop called %d times; output:\n%s", modeFiles[m], *stops, lineDiff([]byte(got), []byte(want)))
		}
		s, stops = failFastSession(t, "allpass", m)
		s.upTo("=== RUN   TestSubPass/two")
		s.r.Fail("TestSubPass/two", blocked)
		got = s.finish()
		if *stops != 0 || s.r.Stopped() || !strings.HasSuffix(got, "FAIL\n") || strings.Contains(got, "failfast") {
			t.Errorf("mode %s: the last test failed: stop called %d times; output:\n%s", modeFiles[m], *stops, got)
		}
	}
}

// After the stop, a verdict has nowhere to go and fails nothing more; a
// note (a stale marker) still shows, before the final line.
func TestFailFastAfterStop(t *testing.T) {
	s, _ := failFastSession(t, "allpass", ModeVerbose)
	s.upTo("=== RUN   TestPass")
	s.r.Fail("TestPass", blocked)
	s.upTo("=== RUN   TestSkip")
	if !s.r.Stopped() {
		t.Fatal("not stopped at the next test's start")
	}
	if !s.r.Fail("TestSkip", "late verdict") {
		t.Error("Fail after the stop reported false: the caller would fail the package with it")
	}
	s.r.FailPackage("late package verdict")
	s.r.Note("nettrap: stale marker")
	got := s.finish()
	if strings.Contains(got, "late verdict") || strings.Contains(got, "late package") || !strings.HasSuffix(got, "later tests did not run\nnettrap: stale marker\nFAIL\n") {
		t.Errorf("output:\n%s", got)
	}
}

// A call of the next test, decided while the previous test's report is
// still held: its verdict comes before the stop and must not show.
func TestFailFastVerdictOfDroppedTest(t *testing.T) {
	for _, m := range allModes {
		s, stops := failFastSession(t, "allpass", m)
		s.upTo("=== RUN   TestPass")
		s.r.Fail("TestPass", blocked)
		release := s.r.Hold()
		s.upTo("=== RUN   TestSkip") // --- PASS: TestPass and === RUN TestSkip wait
		if !s.r.Fail("TestSkip", "verdict of the dropped test") {
			t.Fatal("Fail of a started test reported false")
		}
		release()
		got := s.finish()
		if *stops != 1 || strings.Contains(got, "verdict of the dropped test") || !strings.Contains(got, "later tests did not run") {
			t.Errorf("mode %s: stop called %d times; output:\n%s", modeFiles[m], *stops, got)
		}
	}
}
