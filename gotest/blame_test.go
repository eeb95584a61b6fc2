package gotest

import (
	"slices"
	"strings"
	"testing"

	"github.com/nettrap/nettrap/audit"
	"github.com/nettrap/nettrap/guard"
	"github.com/nettrap/nettrap/teststream"
)

// report reports rec with its line within a transaction, as the guard
// does.
func (f *trackerFixture) report(w guard.Who, rec audit.Record, line string) {
	tx := f.tr.Begin(nil)
	f.tr.report(w, rec, line)
	tx.End()
}

var leakStack = []audit.Frame{
	{Func: "net.(*Dialer).DialContext", File: "/go/src/net/dial.go", Line: 587},
	{Func: "example.com/p.fetch", File: "/src/p/client.go", Line: 31},
	{Func: "example.com/p.TestA.func1", File: "/src/p/leak_test.go", Line: 12},
}

// A goroutine TestA left running dials during TestB: the stack says it
// is TestA's, which had ended, so the package fails with a line naming
// TestA, and TestB, innocent, passes.
func TestBlameMovesToTheEndedTest(t *testing.T) {
	f := newTrackerFixtureMode(t, teststream.ModeQuiet)
	f.emit(mark+"=== RUN   TestA", mark+"--- PASS: TestA (0.00s)", mark+"=== RUN   TestB")
	w := f.who()
	if w.Test != "TestB" || !slices.Equal(w.Active, []string{"TestB"}) || w.ShowsAudit || w.ShowsStack {
		t.Fatalf("in TestB: %+v, want TestB active alone, would-be denials and stacks not shown (quiet)", w)
	}
	line := "nettrap: Outbound network blocked: connect tcp 203.0.113.7:80 (external) during TestB at client.go:31 (p.fetch), " +
		"from a goroutine started by TestA at leak_test.go:12, which had ended"
	f.report(w, audit.Record{Decision: audit.Denied, Test: "TestB", Origin: audit.Origin{StartedBy: "TestA", StartedByEnded: true, Stack: leakStack}}, line)
	f.emit(mark+"--- PASS: TestB (0.00s)", mark+"PASS")
	out, _ := f.finish()
	if !strings.Contains("\n"+out, "\n"+line+"\n") || strings.Contains(out, "--- FAIL") || !strings.HasSuffix(out, "FAIL\n") {
		t.Errorf("want the line outside the tests (the package fails), no test failed:\n%s", out)
	}
}

// TestA's end was written before the call but is still held (the call's
// transaction drained it): the package fails all the same, as the line
// says TestA had ended, and TestA's --- PASS stays. Before, the verdict
// went into TestA's held output, failing TestA or the package by how far
// the output had been written.
func TestBlameEndedTestWhoseEndIsHeld(t *testing.T) {
	for _, mode := range []teststream.Mode{teststream.ModeVerbose, teststream.ModeJSONFramed} {
		f := newTrackerFixtureMode(t, mode)
		f.emit(mark + "=== RUN   TestA")
		f.who() // TestA's start is out
		f.emit(mark+"--- PASS: TestA (0.00s)", mark+"=== RUN   TestB")
		tx := f.tr.Begin(nil) // drains TestA's end and TestB's start, and holds them
		w := tx.Who()
		if w.Test != "TestB" || !slices.Equal(w.Active, []string{"TestB"}) {
			tx.End()
			t.Fatalf("mode %v: in the call's transaction %+v, want TestB active alone", mode, w)
		}
		line := "nettrap: Outbound network blocked: connect tcp 203.0.113.7:80 (external) during TestB at client.go:31 (p.fetch), " +
			"from a goroutine started by TestA at leak_test.go:12, which had ended"
		f.tr.report(w, audit.Record{Decision: audit.Denied, Test: "TestB", Origin: audit.Origin{StartedBy: "TestA", StartedByEnded: true, Stack: leakStack}}, line)
		tx.End()
		f.emit(mark+"--- PASS: TestB (0.00s)", mark+"PASS")
		out, _ := f.finish()
		if strings.Contains(out, "--- FAIL") || !strings.Contains(out, "--- PASS: TestA") || !strings.HasSuffix(out, "FAIL\n") {
			t.Errorf("mode %v: want TestA and TestB passed and the package failed:\n%s", mode, out)
		}
		i, j := strings.Index(out, line), strings.Index(out, "=== RUN   TestB")
		if i < 0 || j < 0 || i < j {
			t.Errorf("mode %v: want the line after TestB's start (outside TestA's output):\n%s", mode, out)
		}
	}
}

// The module's frames a line shows under it with -v (guard adds them
// where Who.ShowsStack says the attribution shows them).
var leakFrames = []audit.Frame{
	{Func: "example.com/p.fetch", File: "p/client.go", Line: 31},
	{Func: "example.com/p.get", File: "p/client.go", Line: 20},
	{Func: "example.com/p.TestA.func1", File: "p/leak_test.go", Line: 12},
}

// The goroutine's test still runs (paused, parallel): it fails, with the
// line and, with -v, the module's frames under it; the running test
// does not.
func TestBlameMovesToTheRunningTest(t *testing.T) {
	f := newTrackerFixture(t)
	f.emit(mark+"=== RUN   TestA", mark+"=== PAUSE TestA", mark+"=== RUN   TestB")
	w := f.who()
	if !slices.Contains(w.Active, "TestA") || !w.ShowsAudit || !w.ShowsStack {
		t.Fatalf("who %+v: want TestA active, would-be denials and stacks shown (-v)", w)
	}
	line := "nettrap: Outbound network blocked: connect tcp 203.0.113.7:80 (external) during TestB at p/client.go:31 (p.fetch), from a goroutine started by TestA at p/leak_test.go:12"
	f.report(w, audit.Record{Decision: audit.Denied, Test: "TestB", Origin: audit.Origin{StartedBy: "TestA", Stack: leakStack}}, line+audit.FramesText(leakFrames))
	f.emit(mark+"--- PASS: TestB (0.00s)", mark+"=== CONT  TestA", mark+"--- PASS: TestA (0.00s)", mark+"PASS")
	out, _ := f.finish()
	want := "    " + line + "\n" +
		"        p/client.go:31 (p.fetch)\n" +
		"        p/client.go:20 (p.get)\n" +
		"        p/leak_test.go:12 (p.TestA.func1)\n"
	if !strings.Contains(out, "--- FAIL: TestA") || !strings.Contains(out, "--- PASS: TestB") || !strings.Contains(out, want) {
		t.Errorf("want TestA failed with the line and its frames, TestB passed:\n%s\nwant\n%s", out, want)
	}
}

// --mode=audit: with -v a would-be denial's line (and its frames) goes into
// the test's output, and the test passes; without -v it does not (the
// guard prints it on its messages, Who.ShowsAudit false).
func TestWouldBlockInTheTestsOutput(t *testing.T) {
	line := "nettrap: audit: would block: connect tcp 203.0.113.7:80 (external) during TestA at p/client.go:31 (p.fetch)"
	rec := audit.Record{Decision: audit.WouldDeny, Test: "TestA", Origin: audit.Origin{Stack: leakStack[:2]}}
	for _, mode := range []teststream.Mode{teststream.ModeVerbose, teststream.ModeJSONFramed, teststream.ModeQuiet} {
		f := newTrackerFixtureMode(t, mode)
		f.emit(mark + "=== RUN   TestA")
		w := f.who()
		if w.ShowsAudit != (mode != teststream.ModeQuiet) {
			t.Errorf("mode %v: ShowsAudit %v", mode, w.ShowsAudit)
		}
		if w.ShowsStack != w.ShowsAudit {
			t.Errorf("mode %v: ShowsStack %v, ShowsAudit %v", mode, w.ShowsStack, w.ShowsAudit)
		}
		if w.ShowsAudit {
			f.report(w, rec, line+audit.FramesText(leakFrames[:2]))
		}
		f.emit(mark+"--- PASS: TestA (0.00s)", mark+"PASS")
		out, _ := f.finish()
		if f.tr.Failed() || strings.Contains(out, "FAIL") {
			t.Errorf("mode %v: a would-be denial failed something:\n%s", mode, out)
		}
		shown := strings.Contains(out, "    "+line+"\n        p/client.go:31 (p.fetch)\n        p/client.go:20 (p.get)\n")
		if shown != (mode != teststream.ModeQuiet) {
			t.Errorf("mode %v: line and stack shown %v:\n%s", mode, shown, out)
		}
		if mode == teststream.ModeJSONFramed && !strings.Contains(out, mark+"=== RUN   TestA\n    "+line) {
			t.Errorf("-json: the line is not framed as TestA's output:\n%q", out)
		}
	}
}

// Two tests run in parallel, and the caller's stack pinned the call to
// TestB (the guard's record names it alone): TestB fails, TestA passes,
// though the transaction's Who had both. TestA's marker is no more used
// by TestB's allowed call either.
func TestBlamePinnedAmongParallelTests(t *testing.T) {
	f := newTrackerFixture(t)
	f.emit(mark+"=== RUN   TestA", mark+"=== ATTR  TestA nettrap network", mark+"=== PAUSE TestA",
		mark+"=== RUN   TestB", mark+"=== ATTR  TestB nettrap network", mark+"=== PAUSE TestB",
		mark+"=== CONT  TestA", mark+"=== CONT  TestB")
	w := f.who()
	if !slices.Equal(w.Candidates, []string{"TestA", "TestB"}) || !slices.Equal(w.MarkedCandidates, []string{"TestA", "TestB"}) {
		t.Fatalf("who %+v, want candidates TestA, TestB, both marked", w)
	}
	f.report(w, audit.Record{Decision: audit.Allowed, Test: "TestB"}, "")
	line := "nettrap: Outbound network blocked: connect tcp 203.0.113.7:80 (external) during TestB at b_test.go:9 (p.TestB)"
	f.report(w, audit.Record{Decision: audit.Denied, Test: "TestB"}, line)
	f.emit(mark+"--- PASS: TestA (0.00s)", mark+"--- PASS: TestB (0.00s)", mark+"PASS")
	out, stale := f.finish()
	if !strings.Contains(out, "--- PASS: TestA") || !strings.Contains(out, "--- FAIL: TestB") || !strings.Contains(out, line) {
		t.Errorf("want TestB failed with the line, TestA passed:\n%s", out)
	}
	if !slices.Equal(stale, []string{"TestA"}) {
		t.Errorf("stale markers %q, want [TestA] (only TestB used its marker)", stale)
	}
}

// A goroutine the stack ties to no running test (its code is TestA's
// closure by name only, audit.Origin.Unowned) dials during TestB: the
// package fails with the line; TestB, which the timing alone names,
// passes, and so does TestA, whose closure's name is no evidence that
// it started the goroutine. Would-be denials of it are the package's
// lines too.
func TestBlameUnownedGoesToThePackage(t *testing.T) {
	for _, d := range []audit.Decision{audit.Denied, audit.WouldDeny} {
		f := newTrackerFixture(t)
		f.emit(mark+"=== RUN   TestA", mark+"=== PAUSE TestA", mark+"=== RUN   TestB")
		w := f.who()
		line := "nettrap: Outbound network blocked: connect tcp 203.0.113.7:80 (external) during TestB at client.go:31 (p.fetch, called from leak_test.go:12), " +
			"in a goroutine of p.TestA.func1 that no running test is known to have started"
		f.report(w, audit.Record{Decision: d, Test: "TestB", Origin: audit.Origin{Unowned: true, Goroutine: "example.com/p.TestA.func1"}}, line)
		f.emit(mark+"--- PASS: TestB (0.00s)", mark+"=== CONT  TestA", mark+"--- PASS: TestA (0.00s)", mark+"PASS")
		out, _ := f.finish()
		if strings.Contains(out, "--- FAIL") || !strings.Contains(out, "\n"+line+"\n") {
			t.Errorf("%s: want TestA and TestB passed, the line among the package's:\n%s", d, out)
		}
		if failed := strings.HasSuffix(out, "FAIL\n"); failed != (d == audit.Denied) {
			t.Errorf("%s: package failed %v:\n%s", d, failed, out)
		}
	}
}
