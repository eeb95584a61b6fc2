package gotest

import (
	"bytes"
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/audit"
	"github.com/nettrap/nettrap/classify"
	"github.com/nettrap/nettrap/guard"
	"github.com/nettrap/nettrap/policy"
	"github.com/nettrap/nettrap/teststream"
)

const mark = "\x16"

type trackerFixture struct {
	t   *testing.T
	w   *os.File
	tr  *Tracker
	out *bytes.Buffer
}

func newTrackerFixture(t *testing.T, allow ...string) *trackerFixture {
	t.Helper()
	return newTrackerFixtureMode(t, teststream.ModeVerbose, allow...)
}

func newTrackerFixtureMode(t *testing.T, mode teststream.Mode, allow ...string) *trackerFixture {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	var res []TestRule
	for _, a := range allow {
		res = append(res, MustParseTestRule(a))
	}
	out := &bytes.Buffer{}
	tr, err := NewTracker(r, out, Plan{Mode: mode}, "example.com/p", res)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close(); r.Close() })
	return &trackerFixture{t: t, w: w, tr: tr, out: out}
}

// emit writes lines as the test binary would; Who then drains them.
func (f *trackerFixture) emit(lines ...string) {
	for _, l := range lines {
		if _, err := f.w.WriteString(l + "\n"); err != nil {
			f.t.Fatal(err)
		}
	}
}

func (f *trackerFixture) who() guard.Who {
	tx := f.tr.Begin(nil)
	defer tx.End()
	return tx.Who()
}

// deny reports a denial made by w, within a transaction (holding, as the
// guard does while it decides and reports).
func (f *trackerFixture) deny(w guard.Who, line string) {
	tx := f.tr.Begin(nil)
	f.tr.report(w, recordOf(w, "denied"), line)
	tx.End()
}

// recordOf is a record of a call w made, as the guard writes it: its
// test and candidates are w's.
func recordOf(w guard.Who, d audit.Decision) audit.Record {
	return audit.Record{Decision: d, Test: w.Test, Candidates: w.Candidates}
}

// finish ends the run and returns the output and the tests of the stale
// marker records (checking that they are that).
func (f *trackerFixture) finish() (string, []string) {
	out, recs := f.finishRecords()
	var stale []string
	for _, r := range recs {
		if r.Decision == audit.StaleMarker {
			stale = append(stale, r.Test)
		}
	}
	return out, stale
}

func (f *trackerFixture) finishRecords() (string, []audit.Record) {
	f.w.Close()
	recs, err := f.tr.Finish()
	if err != nil {
		f.t.Fatal(err)
	}
	return f.out.String(), recs
}

func TestAttributionSequential(t *testing.T) {
	f := newTrackerFixture(t)
	if w := f.who(); !w.Collection || w.Test != "collection" {
		t.Errorf("before any test: %+v, want collection", w)
	}
	f.emit(mark+"=== RUN   TestA", "    a_test.go:3: hello")
	w := f.who()
	if w.Test != "TestA" || w.Marked || w.Collection || w.Package != "example.com/p" {
		t.Errorf("in TestA: %+v", w)
	}
	f.deny(w, "nettrap: Outbound network blocked: connect tcp 203.0.113.7:80 (external) during TestA")
	f.emit(mark + "--- PASS: TestA (0.00s)")
	if w := f.who(); !w.Collection {
		t.Errorf("between tests: %+v, want collection", w)
	}
	f.emit(mark + "PASS")
	out, _ := f.finish()
	for _, want := range []string{"--- FAIL: TestA", "    nettrap: Outbound network blocked: connect tcp 203.0.113.7:80 (external) during TestA", "\nFAIL\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "PASS") {
		t.Errorf("output still says PASS:\n%s", out)
	}
	if !f.tr.Failed() {
		t.Error("Failed() = false after a denial")
	}
}

func TestAttributionMarkerAndSubtests(t *testing.T) {
	f := newTrackerFixture(t)
	f.emit(mark+"=== RUN   TestLive", mark+"=== ATTR  TestLive nettrap network", mark+"=== RUN   TestLive/sub")
	w := f.who()
	if w.Test != "TestLive/sub" || !w.Marked {
		t.Errorf("subtest of a marked test: %+v, want marked", w)
	}
	f.tr.report(w, recordOf(w, "allowed"), "")
	f.emit(mark+"--- PASS: TestLive/sub (0.00s)", mark+"--- PASS: TestLive (0.00s)")
	f.emit(mark + "=== RUN   TestSibling")
	if w := f.who(); w.Test != "TestSibling" || w.Marked {
		t.Errorf("sibling after a marked test: %+v, want unmarked", w)
	}
	f.emit(mark+"--- PASS: TestSibling (0.00s)", mark+"=== RUN   TestStale", mark+"=== ATTR  TestStale nettrap network",
		mark+"--- PASS: TestStale (0.00s)", mark+"PASS")
	out, stale := f.finish()
	if !slices.Equal(stale, []string{"TestStale"}) {
		t.Errorf("stale = %q, want [TestStale] (TestLive used its marker through its subtest)", stale)
	}
	if !strings.Contains(out, "nettrap: stale marker: TestStale") || f.tr.Failed() {
		t.Errorf("stale marker report missing or failing the run:\n%s", out)
	}
}

func TestAttributionParallel(t *testing.T) {
	f := newTrackerFixture(t, "^TestB$")
	f.emit(mark+"=== RUN   TestB", mark+"=== PAUSE TestB", mark+"=== RUN   TestC", mark+"=== PAUSE TestC",
		mark+"=== CONT  TestB", mark+"=== CONT  TestC")
	w := f.who()
	if !slices.Equal(w.Candidates, []string{"TestB", "TestC"}) || w.Marked {
		t.Errorf("parallel: %+v, want candidates TestB, TestC, not marked (only TestB matches --allow-test)", w)
	}
	f.deny(w, "nettrap: blocked")
	f.emit(mark+"--- PASS: TestB (0.00s)", mark+"--- PASS: TestC (0.00s)", mark+"PASS")
	out, _ := f.finish()
	if !strings.Contains(out, "--- FAIL: TestB") || !strings.Contains(out, "--- FAIL: TestC") {
		t.Errorf("both candidates must fail:\n%s", out)
	}
}

func TestAllowTestRegexp(t *testing.T) {
	f := newTrackerFixture(t, "^TestLive", "p.^TestLiveAPI$", "q.^TestLiveAPI$")
	f.emit(mark+"=== RUN   TestLiveAPI", mark+"=== RUN   TestLiveAPI/x")
	w := f.who()
	if !w.Marked || !slices.Equal(w.AllowTest, []string{"^TestLive", "p.^TestLiveAPI$"}) {
		t.Errorf("--allow-test ^TestLive, p.^TestLiveAPI$ (package example.com/p): %+v, want marked by both", w)
	}
}

// What marks a test reaches the policy, which names it in the reason of
// an allowed call (policy.MarkedReason): the rule, the marker, both; for
// parallel candidates, the rules of any and the marker of any.
func TestAllowTestReason(t *testing.T) {
	f := newTrackerFixture(t, "p.^TestRule", "^TestBoth$")
	for _, tc := range []struct {
		events []string
		want   string
	}{
		{[]string{"=== RUN   TestRule"}, "allowed: --allow-test 'p.^TestRule'"},
		{[]string{"--- PASS: TestRule (0.00s)", "=== RUN   TestMarked", "=== ATTR  TestMarked nettrap network", "=== RUN   TestMarked/sub"},
			"allowed: marked test"},
		{[]string{"--- PASS: TestMarked/sub (0.00s)", "--- PASS: TestMarked (0.00s)", "=== RUN   TestBoth", "=== ATTR  TestBoth nettrap network"},
			"allowed: marked test and --allow-test '^TestBoth$'"},
		{[]string{"--- PASS: TestBoth (0.00s)", "=== RUN   TestRuleP", "=== PAUSE TestRuleP", "=== RUN   TestM", "=== ATTR  TestM nettrap network",
			"=== PAUSE TestM", "=== CONT  TestRuleP", "=== CONT  TestM"}, "allowed: marked test and --allow-test 'p.^TestRule'"},
	} {
		for _, e := range tc.events {
			f.emit(mark + e)
		}
		w := f.who()
		if got := policy.MarkedReason(w.Context); !w.Marked || got != tc.want {
			t.Errorf("after %q: %+v, reason %q; want marked, %q", tc.events, w, got, tc.want)
		}
	}
}

// A test only a rule names, which makes no attempt, is no stale marker
// (the run as a whole reports unused rules); a test of another package
// than the rule names is not marked.
func TestAllowTestRuleNotStale(t *testing.T) {
	f := newTrackerFixture(t, "^TestSetup$", "q.^TestOther$")
	f.emit(mark+"=== RUN   TestSetup", mark+"--- PASS: TestSetup (0.00s)", mark+"=== RUN   TestOther")
	if w := f.who(); w.Marked || len(w.AllowTest) != 0 {
		t.Errorf("TestOther of example.com/p under q.^TestOther$: %+v, want unmarked", w)
	}
	f.emit(mark+"--- PASS: TestOther (0.00s)", mark+"PASS")
	out, stale := f.finish()
	if len(stale) != 0 || strings.Contains(out, "stale marker") {
		t.Errorf("a rule's test reported stale: %q\n%s", stale, out)
	}
}

func TestUnknownMarkerValueFails(t *testing.T) {
	f := newTrackerFixture(t)
	f.emit(mark+"=== RUN   TestOdd", mark+"=== ATTR  TestOdd nettrap yes-please", mark+"--- PASS: TestOdd (0.00s)", mark+"PASS")
	out, _ := f.finish()
	if !strings.Contains(out, "--- FAIL: TestOdd") || !strings.Contains(out, `unknown value "yes-please"`) {
		t.Errorf("unknown attribute value did not fail the test:\n%s", out)
	}
}

func TestCollectionTimeFailsPackage(t *testing.T) {
	f := newTrackerFixture(t)
	f.emit(mark+"=== RUN   TestA", mark+"--- PASS: TestA (0.00s)")
	w := f.who()
	f.deny(w, "nettrap: Outbound network blocked: connect tcp 203.0.113.7:80 (external) at collection time")
	f.emit(mark + "PASS")
	out, _ := f.finish()
	if !strings.Contains(out, "--- PASS: TestA") || !strings.Contains(out, "at collection time") || !strings.HasSuffix(out, "FAIL\n") {
		t.Errorf("collection-time denial must fail the package, not TestA:\n%s", out)
	}
}

// Under --sealed a marked test's attempt is denied by the policy and fails
// the test with a line saying the marker was ignored; --allow-test is not
// applied, and a marker that opened nothing is not stale.
func TestSealedMarkerFailsTest(t *testing.T) {
	f := newTrackerFixture(t, "^TestAllowed$")
	f.tr.Sealed = true
	f.emit(mark + "=== RUN   TestAllowed")
	if w := f.who(); w.Marked {
		t.Errorf("--allow-test under --sealed: %+v, want unmarked", w)
	}
	f.emit(mark+"--- PASS: TestAllowed (0.00s)", mark+"=== RUN   TestLive", mark+"=== ATTR  TestLive nettrap network")
	w := f.who()
	if w.Test != "TestLive" || !w.Marked {
		t.Fatalf("in TestLive: %+v, want the marker seen (so the denial can name it)", w)
	}
	d, err := netip.ParseAddrPort("203.0.113.7:443")
	if err != nil {
		t.Fatal(err)
	}
	dest := classify.Dest{Family: unix.AF_INET, Addr: d}
	dec := (&policy.Policy{Sealed: true}).Decide(policy.Attempt{Kind: policy.Destination, Dest: dest, Class: classify.External, Context: w.Context})
	rec := audit.Record{Package: w.Package, Test: w.Test, Marked: w.Marked, Syscall: "connect", SockType: "tcp",
		Dest: dest.String(), Class: "external", Decision: dec.Verdict, Reason: dec.Reason}
	line := "nettrap: " + audit.Message(rec, false, audit.ParallelBinary)
	tx := f.tr.Begin(nil)
	tx.Report(rec, line)
	tx.End()
	f.emit(mark+"--- PASS: TestLive (0.00s)", mark+"=== RUN   TestUnused", mark+"=== ATTR  TestUnused nettrap network",
		mark+"--- PASS: TestUnused (0.00s)", mark+"PASS")
	out, stale := f.finish()
	if !strings.Contains(out, "--- FAIL: TestLive") || !strings.Contains(out, "during TestLive: "+audit.ReasonMarkerIgnored) {
		t.Errorf("the marked test's denial must fail it and say the marker was ignored:\n%s", out)
	}
	if !f.tr.Failed() {
		t.Error("Failed() = false after a sealed denial")
	}
	if len(stale) != 0 || strings.Contains(out, "stale marker") {
		t.Errorf("stale markers under --sealed: %q\n%s", stale, out)
	}
}

// One cause, one line: a line repeated for the same run of a test (a
// lookup's A and AAAA queries at each nameserver, a retry loop's dials)
// is shown once, and the test fails; another line, another run of the
// test (-count=2), another candidate, the package's lines each show
// theirs once. Would-be denials alike.
func TestRepeatedLineShownOnce(t *testing.T) {
	const lookup = "nettrap: DNS lookup blocked: example.com during TestA: mock the resolver or the client, or mark the test (docs/tests.md#the-marker)"
	const dial = "nettrap: Outbound network blocked: connect tcp 203.0.113.7:80 (external) during TestA"
	const pkg = "nettrap: Outbound network blocked: connect tcp 203.0.113.7:80 (external) at collection time (package init, TestMain, or between tests)"
	for _, mode := range []teststream.Mode{teststream.ModeVerbose, teststream.ModeJSONFramed, teststream.ModeQuiet} {
		f := newTrackerFixtureMode(t, mode)
		f.deny(f.who(), pkg)
		f.deny(f.who(), pkg)
		for run := 0; run < 2; run++ {
			f.emit(mark + "=== RUN   TestA")
			w := f.who()
			for range 8 {
				f.deny(w, lookup)
			}
			f.deny(w, dial)
			f.deny(w, dial)
			f.emit(mark + "--- PASS: TestA (0.00s)")
			f.who() // the run's end, read before the next run starts
		}
		f.emit(mark+"=== RUN   TestP", mark+"=== PAUSE TestP", mark+"=== RUN   TestQ", mark+"=== PAUSE TestQ",
			mark+"=== CONT  TestP", mark+"=== CONT  TestQ")
		par := "nettrap: Outbound network blocked: connect tcp 203.0.113.7:80 (external) during one of TestP, TestQ (ambiguous: parallel tests were running; rerun with -parallel=1 to pin it)"
		w := f.who()
		f.deny(w, par)
		f.deny(w, par)
		f.emit(mark+"--- PASS: TestP (0.00s)", mark+"--- PASS: TestQ (0.00s)", mark+"PASS")
		out, _ := f.finish()
		// The test teststream.PackageTest repeats the package's lines
		// for reporters that list failed tests only: not a second
		// showing.
		if i := strings.Index(out, "=== RUN   "+teststream.PackageTest); i >= 0 {
			out = out[:i]
		}
		for _, c := range []struct {
			line string
			n    int
		}{{lookup, 2}, {dial, 2}, {pkg, 1}, {par, 2}} {
			if n := strings.Count(out, c.line); n != c.n {
				t.Errorf("mode %v: %q shown %d times, want %d (once per run of each test it fails):\n%s", mode, c.line, n, c.n, out)
			}
		}
		if n := strings.Count(out, "--- FAIL: TestA"); n != 2 || !strings.Contains(out, "--- FAIL: TestP") || !strings.Contains(out, "--- FAIL: TestQ") {
			t.Errorf("mode %v: want both runs of TestA, TestP and TestQ failed:\n%s", mode, out)
		}
	}
	// --mode=audit, with -v: the test's output shows a would-be
	// denial's line once; it fails nothing.
	f := newTrackerFixture(t)
	f.emit(mark + "=== RUN   TestA")
	w := f.who()
	would := "nettrap: audit: would block: connect tcp 203.0.113.7:80 (external) during TestA"
	for range 3 {
		f.report(w, recordOf(w, audit.WouldDeny), would)
	}
	f.emit(mark+"--- PASS: TestA (0.00s)", mark+"PASS")
	out, _ := f.finish()
	if n := strings.Count(out, would); n != 1 || f.tr.Failed() {
		t.Errorf("would-be denial shown %d times (want 1), failed %v:\n%s", n, f.tr.Failed(), out)
	}
}

// TestLeftCallFailsNothing: a denial whose caller left the call (a
// signal; the kernel makes it again, and that call is judged) is shown
// among the package's lines and fails no test, nor the package.
func TestLeftCallFailsNothing(t *testing.T) {
	f := newTrackerFixture(t)
	f.emit(mark + "=== RUN   TestA")
	w := f.who()
	rec := recordOf(w, "denied")
	rec.Left = true
	tx := f.tr.Begin(nil)
	f.tr.report(w, rec, "nettrap: Outbound network blocked: connect tcp 203.0.113.7:80 (external) during TestA")
	tx.End()
	f.emit(mark+"--- PASS: TestA (0.00s)", mark+"PASS")
	out, _ := f.finish()
	if strings.Contains(out, "FAIL") || !strings.Contains(out, "203.0.113.7:80") {
		t.Errorf("a left call failed something, or was not shown:\n%s", out)
	}
}
