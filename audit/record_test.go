package audit

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// Fields that do not apply are left out; an old record that wrote them as
// zero reads back the same as a new one that leaves them out.
func TestRecordJSON(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		rec  Record
		want string
	}{
		{Record{Schema: 1, Time: at, Package: "p", Test: "TestOld", Marked: true, Decision: StaleMarker, Reason: "r"},
			`{"schema":1,"time":"2026-01-02T03:04:05Z","package":"p","test":"TestOld","marked":true,"decision":"stale-marker","reason":"r"}`},
		{Record{Schema: 1, Time: at, Package: "p", Test: "TestOdd", Decision: BadMarker, MarkerValue: "yes"},
			`{"schema":1,"time":"2026-01-02T03:04:05Z","package":"p","test":"TestOdd","decision":"bad-marker","marker_value":"yes"}`},
		{Record{Schema: 1, Time: at, Test: "TestB", PID: 7, TID: 8, Syscall: "connect", Decision: "denied",
			Origin: Origin{Where: &Frame{Func: "m/p.get", File: "p/c.go", Line: 3}, CalledFrom: &Frame{Func: "m/p.TestA.func1", File: "p/a_test.go", Line: 9},
				Goroutine: "m/p.TestA.func1", StartedBy: "TestA", StartedByEnded: true,
				Stack: []Frame{{Func: "m/p.get", File: "/src/p/c.go", Line: 3}, {Func: "m/p.TestA.func1", File: "/src/p/a_test.go", Line: 9}}}},
			`{"schema":1,"time":"2026-01-02T03:04:05Z","test":"TestB","pid":7,"tid":8,"syscall":"connect","decision":"denied",` +
				`"where":{"func":"m/p.get","file":"p/c.go","line":3},"called_from":{"func":"m/p.TestA.func1","file":"p/a_test.go","line":9},` +
				`"goroutine":"m/p.TestA.func1","started_by":"TestA","started_by_ended":true,` +
				`"stack":[{"func":"m/p.get","file":"/src/p/c.go","line":3},{"func":"m/p.TestA.func1","file":"/src/p/a_test.go","line":9}]}`},
	} {
		b, err := json.Marshal(tc.rec)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != tc.want {
			t.Errorf("got  %s\nwant %s", b, tc.want)
		}
	}
	var old, cur Record
	if err := json.Unmarshal([]byte(`{"schema":1,"test":"T","pid":0,"tid":0,"syscall":"","decision":"stale-marker"}`), &old); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(`{"schema":1,"test":"T","decision":"stale-marker"}`), &cur); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(old, cur) {
		t.Errorf("old form %+v, new form %+v", old, cur)
	}
	// A log written before the timing hint went still reads: after_test
	// and after_ms are no longer fields, and are ignored.
	var hinted Record
	if err := json.Unmarshal([]byte(`{"schema":1,"test":"TestB","after_test":"TestA","after_ms":0.5,"decision":"denied"}`), &hinted); err != nil ||
		hinted.Test != "TestB" || hinted.Decision != Denied {
		t.Errorf("an older record with after_test read as %+v, %v", hinted, err)
	}
}

// The vocabulary is the audit log's schema: its spelling never changes
// (SchemaVersion would).
func TestVocabularySpelling(t *testing.T) {
	for got, want := range map[string]string{
		string(Allowed): "allowed", string(Denied): "denied", string(WouldDeny): "would-deny",
		string(StaleMarker): "stale-marker", string(BadMarker): "bad-marker", string(NettrapError): "nettrap-error",
		Collection: "collection", ClassInterfacePin: "interface-pin", ClassNetnsChange: "netns-change",
		ClassBPFAttach: "bpf-attach", ClassReason("external"): "external destination",
	} {
		if got != want {
			t.Errorf("%q, want %q", got, want)
		}
	}
	var r Record
	if err := json.Unmarshal([]byte(`{"schema":1,"decision":"would-deny"}`), &r); err != nil || r.Decision != WouldDeny {
		t.Errorf("decision read back as %q, %v", r.Decision, err)
	}
}
