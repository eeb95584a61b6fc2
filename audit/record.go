package audit

import "time"

// SchemaVersion is the version of Record's JSON form. It changes when a
// field changes meaning or goes away; new fields, and fields left out of
// records they do not apply to (read back as zero, as they were written
// before), do not change it.
const SchemaVersion = 1

// Record is one audited network attempt, or a finding about a test (a
// stale or bad marker): one JSON object per line. Fields that do not apply
// to a record are left out: a stale-marker record has no pid, tid or
// syscall.
type Record struct {
	Schema     int       `json:"schema"`
	Time       time.Time `json:"time"`
	RunID      string    `json:"run_id,omitempty"`
	Package    string    `json:"package,omitempty"`
	Test       string    `json:"test,omitempty"` // a test name, or Collection
	Candidates []string  `json:"candidates,omitempty"`
	Marked     bool      `json:"marked,omitempty"`
	PID        int       `json:"pid,omitempty"`
	TID        int       `json:"tid,omitempty"`
	// AllowTest lists the --allow-test rules that named the test of an
	// attempt (as written), or the one rule an UnusedRule finding is about.
	AllowTest []string `json:"allow_test,omitempty"`
	Exe       string   `json:"exe,omitempty"`
	Argv0     string   `json:"argv0,omitempty"`
	Syscall   string   `json:"syscall,omitempty"`
	ABI       string   `json:"abi,omitempty"`
	Family    string   `json:"family,omitempty"`
	SockType  string   `json:"sock_type,omitempty"`
	Dest      string   `json:"dest,omitempty"`
	Class     string   `json:"class,omitempty"`
	Decision  Decision `json:"decision"`
	Reason    string   `json:"reason,omitempty"`
	Errno     string   `json:"errno,omitempty"`
	// Lookup is what a blocked DNS query asked, "TYPE name" (TXT
	// _grpc_config.localhost), when nettrap's sinkhole read it; "" else.
	Lookup string `json:"lookup,omitempty"`
	// MarkerValue is the value of a bad marker (decision BadMarker).
	MarkerValue string `json:"marker_value,omitempty"`
	Origin
}
