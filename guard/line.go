package guard

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/nettrap/nettrap/audit"
)

// Line is the one-line message for a denied (or would-be denied) attempt:
//
//	Outbound network blocked: connect tcp 203.0.113.7:443 (external) by pid 4242 curl
//
// byProcess names the process (generic mode); otherwise the test, as what
// nettrap knows: the call was made while that test was running ("during
// TestX"), not necessarily by its code (a goroutine a previous test left
// running is indistinguishable).
func Line(r audit.Record, byProcess bool) string {
	byProcess = byProcess && len(r.Candidates) == 0
	var b strings.Builder
	if r.Lookup != "" {
		// A query nettrap's sinkhole read: what was looked up says more
		// than the socket call and the class.
		fmt.Fprintf(&b, "DNS lookup blocked: %s via %s", r.Lookup, r.Dest)
		b.WriteString(whoPart(r, byProcess))
		return b.String()
	}
	if r.Decision == audit.WouldDeny {
		b.WriteString("audit: would block: ")
	} else {
		b.WriteString("Outbound network blocked: ")
	}
	b.WriteString(r.Syscall)
	if r.ABI != "" && r.ABI != "x86_64" && r.ABI != "aarch64" {
		b.WriteString(" (" + r.ABI + " ABI)")
	}
	if r.SockType != "" {
		b.WriteString(" " + r.SockType)
	}
	if r.Dest != "" {
		fmt.Fprintf(&b, " %s (%s)", r.Dest, r.Class)
	}
	b.WriteString(whoPart(r, byProcess))
	// The reason is shown unless it only repeats the class: an attempt
	// with no destination, advice (unspecified, dns), a join, a marker
	// ignored under --sealed all say more than the class.
	if r.Reason != "" && r.Reason != audit.ClassReason(r.Class) {
		b.WriteString(": " + r.Reason)
	}
	return b.String()
}

// whoPart says who made the attempt: " during TestX", " by pid N prog", …
func whoPart(r audit.Record, byProcess bool) string {
	switch {
	case len(r.Candidates) > 1:
		return fmt.Sprintf(" during one of %s (ambiguous: parallel tests were running; rerun with -test.parallel=1 to pin it)", candidateList(r.Candidates))
	case r.Test == audit.Collection:
		return " at collection time (package init, TestMain, or between tests)"
	case byProcess || r.Test == "":
		return fmt.Sprintf(" by pid %d %s", r.PID, r.Argv0)
	}
	return " during " + r.Test
}

// maxNamed is how many candidates a line names; the audit record has all.
const maxNamed = 8

func candidateList(names []string) string {
	if len(names) <= maxNamed {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:maxNamed], ", "), len(names)-maxNamed)
}

func jsonLine(r audit.Record) ([]byte, error) { return json.Marshal(r) }
