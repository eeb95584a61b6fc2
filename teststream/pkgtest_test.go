package teststream

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const unowned = "nettrap: Outbound network blocked: connect tcp 203.0.113.7:443 (external) during TestSkip, in a goroutine of fixture.TestPass.func1 that no running test is known to have started"

// event is a test2json event, as the go command writes it.
type event struct{ Action, Test, Output string }

// test2json runs framed output through the go command's test2json.
func test2json(t *testing.T, framed string) []event {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go command not in PATH")
	}
	cmd := exec.Command("go", "tool", "test2json", "-p", "fixture")
	cmd.Stdin = strings.NewReader(framed)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("test2json: %v", err)
	}
	var evs []event
	for _, l := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
		var ev event
		if err := json.Unmarshal(l, &ev); err != nil {
			t.Fatalf("test2json output %q: %v", l, err)
		}
		evs = append(evs, ev)
	}
	return evs
}

// outputOf lists the tests (""; the package) whose output events hold s.
func outputOf(evs []event, s string) []string {
	var tests []string
	for _, ev := range evs {
		if ev.Action == "output" && strings.Contains(ev.Output, s) {
			tests = append(tests, ev.Test)
		}
	}
	return tests
}

// A package verdict in a package whose tests failed too (natively, or
// by a verdict) stays the package's own output, and is also the output
// of the failed test PackageTest before the final line, where reporters
// that list only failed tests find it (gotestsum shows a package's own
// output only when no test of it failed).
func TestPackageTestWithFailedTests(t *testing.T) {
	cases := map[string]struct {
		scenario string
		failTest bool // a verdict fails TestSkip too
	}{
		"native failure": {"basic", false},
		"verdict":        {"allpass", true},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			s := newSession(t, c.scenario, ModeJSONFramed)
			s.upTo("=== RUN   TestSkip")
			s.r.FailPackage(unowned)
			if c.failTest && !s.r.Fail("TestSkip", blocked) {
				t.Fatal("Fail of a running test reported false")
			}
			got := s.finish()
			tail := "\x16=== RUN   nettrap\n    " + unowned + "\n\x16--- FAIL: nettrap (0.00s)\n\x16=== NAME  \n\x16FAIL\n"
			if !strings.HasSuffix(got, tail) {
				t.Errorf("output does not end with the package's test:\n%s", lineDiff([]byte(got), []byte(tail)))
			}
			evs := test2json(t, got)
			if tests := outputOf(evs, unowned); len(tests) != 2 || tests[0] != "" || tests[1] != PackageTest {
				t.Errorf("test2json puts the verdict in the output of %q, want the package's and then %s's", tests, PackageTest)
			}
			if !slices.Contains(evs, event{Action: "fail", Test: PackageTest}) || !slices.Contains(evs, event{Action: "fail"}) {
				t.Errorf("test2json does not fail %s and the package: %+v", PackageTest, evs)
			}
		})
	}
}

// With no failed test the package's own output is what reporters show:
// no PackageTest, in JSON nor in the other modes.
func TestPackageTestOnlyWithFailedTests(t *testing.T) {
	for _, m := range allModes {
		s := newSession(t, "allpass", m)
		s.upTo("=== RUN   TestSkip")
		s.r.FailPackage(unowned)
		got := s.finish()
		if strings.Contains(got, PackageTest+" (") || strings.Contains(got, "RUN   "+PackageTest) {
			t.Errorf("mode %s: the package's test without a failed test:\n%s", modeFiles[m], got)
		}
		if !strings.Contains(got, unowned+"\n") {
			t.Errorf("mode %s: the verdict is missing:\n%s", modeFiles[m], got)
		}
	}
	// The other modes print the line once, outside any test, failed
	// tests or not.
	for _, m := range []Mode{ModeVerbose, ModeQuiet} {
		s := newSession(t, "basic", m)
		s.upTo("=== RUN   TestSkip")
		s.r.FailPackage(unowned)
		got := s.finish()
		if strings.Count(got, unowned) != 1 || strings.Contains(got, PackageTest+" (") {
			t.Errorf("mode %s: want the verdict once and no package's test:\n%s", modeFiles[m], got)
		}
	}
}

// A binary that dies without its final line still gets the package's
// test, at Close.
func TestPackageTestWithoutFinalLine(t *testing.T) {
	s := newSession(t, "exit", ModeJSONFramed)
	s.upTo("exiting")
	s.r.Fail("TestExit", blocked)
	s.r.FailPackage(unowned)
	got := s.finish()
	if !strings.Contains(got, "\x16=== RUN   nettrap\n    "+unowned+"\n\x16--- FAIL: nettrap (0.00s)\n") {
		t.Errorf("no package's test:\n%s", got)
	}
	if tests := outputOf(test2json(t, got), unowned); len(tests) != 2 || tests[1] != PackageTest {
		t.Errorf("test2json puts the verdict in the output of %q", tests)
	}
}
