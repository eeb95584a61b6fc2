package guard

import (
	"fmt"
	"io"
	"sync"

	"github.com/nettrap/nettrap/audit"
	"github.com/nettrap/nettrap/decision"
	"github.com/nettrap/nettrap/policy"
)

// Who is what attribution knows of a call's origin.
type Who struct {
	policy.Context
	Package    string
	Test       string   // the test, or audit.Collection; "" outside Go tests
	Candidates []string // several tests could have made it (t.Parallel)
	// MarkedCandidates are the candidates that carry the marker (or
	// match --allow-test): Context.Marked says all of them do. The
	// caller's stack may pin the call to one candidate (blame.go's
	// pinTo); it does only where that cannot change the decision.
	MarkedCandidates []string `json:",omitempty"`
	// Active are the tests started and not ended (running or paused,
	// parents included): whether the test whose goroutine started the
	// caller's (audit.Origin.StartedBy, from its creators) had ended.
	Active []string `json:",omitempty"`
	// BinaryPID is the test binary's process id, as the supervisor sees
	// it, when known (0: not known). Only that process's goroutines are
	// traced to a test through their creators (byChain): a process it
	// started, the test binary itself re-executed among them, runs its
	// own goroutines, whose tests are not the stream's.
	BinaryPID int `json:",omitempty"`
	// ShowsAudit tells that the attribution shows a would-be denial's
	// line itself (in the test's output, with -v or -json): the guard
	// then does not print it on its messages.
	ShowsAudit bool `json:",omitempty"`
	// ShowsStack tells that the attribution shows, under a verdict's
	// line, the module's frames of the caller's stack (in the test's
	// output, with -v or -json): the guard then adds them to the line
	// (blame.go's shownFrames). The whole stack is the audit record's.
	ShowsStack bool `json:",omitempty"`
}

// Attribution tells which test made a call, and learns of every audited
// attempt so that it can fail the test a denial belongs to. Each call that
// needs a look is one transaction: Begin, then Who, one Report per audited
// attempt, and End once the call's records are written and reported.
// The implementations: a Go test binary's stream (gotest.Tracker), an
// outer nettrap asking the inner one above the caller (hub.Server, and
// hub.Client carrying the transaction to the inner's tracker), and none
// (Generic).
type Attribution interface {
	// Begin starts the transaction of call c. A nil c is a call the
	// caller knows of and this attribution does not need (an inner
	// nettrap answering for its outer).
	Begin(c *decision.Call) Transaction
}

// Transaction is an attribution's side of one call, from Begin to End:
// who made the call, and the audited attempts the guard reports on it
// (not an attempt itself: one call may make several, or none audited).
type Transaction interface {
	// Who tells who made the call; it does not change during the
	// transaction.
	Who() Who
	// Report is told of every audited attempt of the call, with the
	// message line of a denial or a would-be denial ("nettrap: Outbound
	// network blocked: …", "nettrap: audit: would block: …") or "" for
	// others. It shows a denial's line itself: under the test it fails
	// (rec's Test or Candidates, which the caller's stack may have
	// pinned among Who's; the package for rec.Unowned), or on the
	// messages; a would-be denial's when Who.ShowsAudit.
	Report(rec audit.Record, line string)
	// End ends the transaction; the attribution may let go of what it
	// held for the call (a test's end line). Called exactly once. A
	// Report may still come after it (a redirected DNS socket's later
	// queries): the attribution then does what it still can with it.
	End()
}

// Generic is the attribution of any command (generic mode): no test, the
// process is named, and denial lines go to Messages, each once when
// Once is set.
type Generic struct {
	Messages io.Writer
	Once     *Lines // nil: every line is shown
}

// Begin implements Attribution.
func (g Generic) Begin(*decision.Call) Transaction { return genericTransaction{g} }

type genericTransaction struct{ g Generic }

func (genericTransaction) Who() Who { return Who{} }
func (genericTransaction) End()     {}

func (tx genericTransaction) Report(rec audit.Record, line string) {
	if line != "" && rec.Decision == audit.Denied && tx.g.Messages != nil && tx.g.Once.First(line) {
		fmt.Fprintln(tx.g.Messages, line)
	}
}

// Lines tells whether a message line is shown for the first time: a
// line repeated word for word (the same process or test, the same
// cause, the same place: a lookup's A and AAAA queries at each
// nameserver, a retry loop's dials) is one event for the user, shown
// once; each call keeps its own record in the audit log. Safe for
// concurrent use; the zero Lines is ready.
type Lines struct {
	mu   sync.Mutex
	seen map[string]bool
}

// First reports whether line was not seen before, and marks it seen. A
// nil *Lines sees every line for the first time.
func (l *Lines) First(line string) bool {
	if l == nil {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seen[line] {
		return false
	}
	if l.seen == nil {
		l.seen = map[string]bool{}
	}
	l.seen[line] = true
	return true
}
