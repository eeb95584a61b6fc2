package audit

import "time"

// SchemaVersion is the version of Record's JSON form. It changes when a
// field changes meaning or goes away; new fields do not change it.
const SchemaVersion = 1

// Record is one audited network attempt: one JSON object per line.
type Record struct {
	Schema     int       `json:"schema"`
	Time       time.Time `json:"time"`
	RunID      string    `json:"run_id,omitempty"`
	Package    string    `json:"package,omitempty"`
	Test       string    `json:"test,omitempty"` // a test name, or "collection"
	Candidates []string  `json:"candidates,omitempty"`
	Marked     bool      `json:"marked,omitempty"`
	PID        int       `json:"pid"`
	TID        int       `json:"tid"`
	Exe        string    `json:"exe,omitempty"`
	Argv0      string    `json:"argv0,omitempty"`
	Syscall    string    `json:"syscall"`
	ABI        string    `json:"abi,omitempty"`
	Family     string    `json:"family,omitempty"`
	SockType   string    `json:"sock_type,omitempty"`
	Dest       string    `json:"dest,omitempty"`
	Class      string    `json:"class,omitempty"`
	Decision   string    `json:"decision"`
	Reason     string    `json:"reason,omitempty"`
	Errno      string    `json:"errno,omitempty"`
}
