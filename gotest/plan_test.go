package gotest

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// newPlanFixture is newTrackerFixture for a binary run with args.
func newPlanFixture(t *testing.T, args ...string) *trackerFixture {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	out := &bytes.Buffer{}
	plan := Rewrite(append([]string{"x.test"}, args...))
	tr, err := NewTracker(r, out, plan, "example.com/p", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close(); r.Close() })
	return &trackerFixture{t: t, w: w, tr: tr, out: out}
}

// TestAttributionUserVerbose: with a -test.v of the user's that may be in
// effect (after -update, a flag of unknown arity) the binary may print
// plain -v output; the tracker names the test from it, sees markers, and
// writes the output as the binary printed it, verdicts worked in.
func TestAttributionUserVerbose(t *testing.T) {
	f := newPlanFixture(t, "-test.run", "TestS", "-update", "-test.v")
	f.emit("=== RUN   TestS", "=== RUN   TestS/a", "    s_test.go:3: a")
	w := f.who()
	if w.Test != "TestS/a" || w.Marked || w.Collection {
		t.Errorf("in TestS/a: %+v", w)
	}
	f.deny(w, "nettrap: blocked in TestS/a")
	f.emit("=== RUN   TestS/b", "=== ATTR  TestS/b nettrap network")
	if w := f.who(); w.Test != "TestS/b" || !w.Marked || len(w.Candidates) > 0 {
		t.Errorf("in TestS/b: %+v, want it alone and marked (TestS/a is done)", w)
	}
	f.emit("--- PASS: TestS (0.00s)", "    --- PASS: TestS/a (0.00s)", "    --- PASS: TestS/b (0.00s)")
	if w := f.who(); !w.Collection {
		t.Errorf("after TestS: %+v, want collection", w)
	}
	f.emit("PASS")
	out, stale := f.finish()
	want := "=== RUN   TestS\n=== RUN   TestS/a\n    s_test.go:3: a\n    nettrap: blocked in TestS/a\n" +
		"=== RUN   TestS/b\n=== ATTR  TestS/b nettrap network\n" +
		"--- FAIL: TestS (0.00s)\n    --- FAIL: TestS/a (0.00s)\n    --- PASS: TestS/b (0.00s)\n" +
		"nettrap: stale marker: TestS/b may use the network but made no network attempt; remove the marker if the test is mocked\nFAIL\n"
	if out != want {
		t.Errorf("output:\n%s\nwant:\n%s", out, want)
	}
	if len(stale) != 1 || stale[0] != "TestS/b" || !f.tr.Failed() {
		t.Errorf("stale %q, failed %v", stale, f.tr.Failed())
	}
}

// TestAttributionUserQuiet: -test.v=false in effect (it may be: after
// -name, whose arity is unknown, it is not replaced) names no test, so an
// attempt is at collection time and fails the package; the output stays
// the binary's.
func TestAttributionUserQuiet(t *testing.T) {
	f := newPlanFixture(t, "-name", "-test.v=false")
	f.emit("some output")
	w := f.who()
	if !w.Collection {
		t.Errorf("with -test.v=false: %+v, want collection", w)
	}
	f.deny(w, "nettrap: blocked at collection time")
	f.emit("--- FAIL: TestQ (0.00s)", "    q_test.go:9: boom", "FAIL")
	out, _ := f.finish()
	want := "some output\nnettrap: blocked at collection time\n--- FAIL: TestQ (0.00s)\n    q_test.go:9: boom\nFAIL\n"
	if out != want || !f.tr.Failed() {
		t.Errorf("output (failed %v):\n%s\nwant:\n%s", f.tr.Failed(), out, want)
	}
	if strings.Contains(out, "\x16") {
		t.Error("marker in the output")
	}
}

// TestAttributionCertainVerbose: the user's -test.v, certainly in effect,
// is replaced: the binary prints the framed stream, so a call made by a
// parent after its subtests (its cleanup) is the parent's, which plain -v
// output cannot tell (there the subtests' reports come after the
// parent's). The output is rendered as -test.v=true prints it.
func TestAttributionCertainVerbose(t *testing.T) {
	f := newPlanFixture(t, "-test.run", "TestP", "-test.v")
	f.emit(mark+"=== RUN   TestP", mark+"=== RUN   TestP/a", "    p_test.go:3: a",
		mark+"--- PASS: TestP/a (0.00s)", mark+"=== NAME  TestP")
	w := f.who()
	if w.Test != "TestP" || w.Collection {
		t.Errorf("after TestP/a ended: %+v, want TestP", w)
	}
	f.deny(w, "nettrap: blocked in TestP")
	f.emit(mark+"--- PASS: TestP (0.00s)", mark+"PASS")
	out, _ := f.finish()
	want := "=== RUN   TestP\n=== RUN   TestP/a\n    p_test.go:3: a\n=== NAME  TestP\n    nettrap: blocked in TestP\n" +
		"--- FAIL: TestP (0.00s)\n    --- PASS: TestP/a (0.00s)\nFAIL\n"
	if out != want || !f.tr.Failed() {
		t.Errorf("output (failed %v):\n%s\nwant:\n%s", f.tr.Failed(), out, want)
	}
}

// TestAttributionCertainQuiet: the user's -test.v=false, certainly in
// effect, is replaced: the framed stream names the test that made the
// attempt (plain -test.v=false names none), and the output is rendered as
// the binary prints it without -v.
func TestAttributionCertainQuiet(t *testing.T) {
	f := newPlanFixture(t, "-test.v=false", "-test.run=TestQ")
	f.emit(mark+"=== RUN   TestQ", "    q_test.go:9: log")
	w := f.who()
	if w.Test != "TestQ" || w.Collection {
		t.Errorf("in TestQ: %+v, want TestQ", w)
	}
	f.deny(w, "nettrap: blocked in TestQ")
	f.emit(mark+"--- PASS: TestQ (0.00s)", mark+"=== RUN   TestR", mark+"--- PASS: TestR (0.00s)", mark+"PASS")
	out, _ := f.finish()
	want := "--- FAIL: TestQ (0.00s)\n    q_test.go:9: log\n    nettrap: blocked in TestQ\nFAIL\n"
	if out != want || !f.tr.Failed() {
		t.Errorf("output (failed %v):\n%s\nwant:\n%s", f.tr.Failed(), out, want)
	}
}
