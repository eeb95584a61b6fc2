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
		{Record{Schema: 1, Time: at, Test: "TestB", AfterTest: "TestA", AfterMS: 0.5, PID: 7, TID: 8, Syscall: "connect", Decision: "denied"},
			`{"schema":1,"time":"2026-01-02T03:04:05Z","test":"TestB","after_test":"TestA","after_ms":0.5,"pid":7,"tid":8,"syscall":"connect","decision":"denied"}`},
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
