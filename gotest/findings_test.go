package gotest

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/nettrap/nettrap/audit"
)

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
		for _, absent := range []string{`"pid"`, `"tid"`, `"syscall"`, `"stack"`} {
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
