package gotest

import (
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nettrap/nettrap/audit"
)

// fakeClock is a clock the test moves by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func (f *trackerFixture) clock() *fakeClock {
	c := &fakeClock{t: time.Unix(1e9, 0)}
	f.tr.now = c.now
	return c
}

func TestLeftoverNamesTheTestThatEnded(t *testing.T) {
	f := newTrackerFixture(t)
	c := f.clock()
	f.emit(mark+"=== RUN   TestA", mark+"=== RUN   TestA/dns")
	if w := f.who(); w.AfterTest != "" {
		t.Errorf("no test ended yet: %+v", w)
	}
	f.emit(mark+"--- PASS: TestA/dns (0.00s)", mark+"=== NAME  TestA", mark+"=== RUN   TestA/unix")
	f.tr.drain() // what the reading goroutine does as lines come
	c.add(3 * time.Millisecond)
	if w := f.who(); w.Test != "TestA/unix" || w.AfterTest != "TestA/dns" || w.AfterGap != 3*time.Millisecond {
		t.Errorf("3ms after TestA/dns ended: %+v, want after TestA/dns by 3ms", w)
	}
	c.add(LeftoverWindow)
	if w := f.who(); w.AfterTest != "" {
		t.Errorf("%v after TestA/dns ended: %+v, want no after_test", LeftoverWindow+3*time.Millisecond, w)
	}
	f.emit(mark+"--- PASS: TestA/unix (0.00s)", mark+"=== NAME  TestA")
	if w := f.who(); w.Test != "TestA" || w.AfterTest != "TestA/unix" || w.AfterGap != 0 {
		t.Errorf("in TestA right after its subtest ended: %+v, want after TestA/unix (its goroutines may outlive it too)", w)
	}
	f.emit(mark+"--- PASS: TestA (0.00s)", mark+"=== NAME  ")
	if w := f.who(); !w.Collection || w.AfterTest != "" {
		t.Errorf("collection time: %+v, want no after_test (TestMain's own calls follow the last test)", w)
	}
	f.emit(mark+"=== RUN   TestP", mark+"=== PAUSE TestP", mark+"=== RUN   TestQ", mark+"=== PAUSE TestQ",
		mark+"=== CONT  TestP", mark+"=== CONT  TestQ")
	if w := f.who(); len(w.Candidates) != 2 || w.AfterTest != "" {
		t.Errorf("parallel candidates: %+v, want no after_test", w)
	}
}

// A bad marker fails its test and gets a record, as a stale marker does;
// neither has the fields of an attempt.
func TestBadMarkerRecord(t *testing.T) {
	f := newTrackerFixture(t)
	f.emit(mark+"=== RUN   TestOdd", mark+"=== ATTR  TestOdd nettrap yes", mark+"--- PASS: TestOdd (0.00s)",
		mark+"=== RUN   TestStale", mark+"=== ATTR  TestStale nettrap network", mark+"--- PASS: TestStale (0.00s)", mark+"PASS")
	out, recs := f.finishRecords()
	if !strings.Contains(out, "--- FAIL: TestOdd") {
		t.Errorf("a bad marker must fail its test:\n%s", out)
	}
	want := []audit.Record{
		{Package: "example.com/p", Test: "TestOdd", Decision: audit.BadMarker, MarkerValue: "yes",
			Reason: `unknown value "yes" of the "nettrap" attribute; the marker is t.Attr("nettrap", "network")`},
		{Package: "example.com/p", Test: "TestStale", Marked: true, Decision: audit.StaleMarker, Reason: "marked test made no network attempt"},
	}
	if len(recs) != len(want) {
		t.Fatalf("records %+v, want %+v", recs, want)
	}
	for i := range want {
		if recs[i].Test != want[i].Test || recs[i].Decision != want[i].Decision || recs[i].MarkerValue != want[i].MarkerValue ||
			recs[i].Reason != want[i].Reason || recs[i].Marked != want[i].Marked || recs[i].Package != want[i].Package {
			t.Errorf("record %d: %+v, want %+v", i, recs[i], want[i])
		}
		b, _ := json.Marshal(recs[i])
		for _, absent := range []string{`"pid"`, `"tid"`, `"syscall"`, `"after_test"`} {
			if strings.Contains(string(b), absent) {
				t.Errorf("record %s has %s, which does not apply", b, absent)
			}
		}
	}
}

// Under -failfast, the start of a test after one nettrap failed stops the
// binary; that test is not reported as a stale marker, whatever it set.
func TestTrackerFailFast(t *testing.T) {
	f := newTrackerFixture(t)
	stops := 0
	f.tr.FailFast(func() { stops++ })
	f.emit(mark + "=== RUN   TestA")
	w := f.who()
	f.deny(w, "nettrap: Outbound network blocked: connect tcp 203.0.113.7:80 (external) during TestA")
	f.emit(mark+"--- PASS: TestA (0.00s)", mark+"=== NAME  ", mark+"=== RUN   TestB", mark+"=== ATTR  TestB nettrap network")
	f.who()
	f.emit(mark+"--- PASS: TestB (0.00s)", mark+"PASS")
	out, stale := f.finish()
	if stops != 1 || !f.tr.Stopped() {
		t.Errorf("stop called %d times, Stopped() = %v; want once, true", stops, f.tr.Stopped())
	}
	if len(stale) != 0 || strings.Contains(out, "TestB (") || !strings.HasSuffix(out, "later tests did not run\nFAIL\n") {
		t.Errorf("stale %q; output:\n%s", stale, out)
	}
	if !slices.Contains(strings.Split(out, "\n"), "--- FAIL: TestA (0.00s)") {
		t.Errorf("TestA not failed:\n%s", out)
	}
}
