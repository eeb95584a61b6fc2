package guard

import (
	"fmt"
	"io"
	"time"

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
	// AfterTest ended AfterGap before the call, shortly enough that a
	// goroutine it left running may have made the call (single Test only).
	AfterTest string
	AfterGap  time.Duration
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
	// message line of a denial ("nettrap: Outbound network blocked: …")
	// or "" for others. It shows a denial's line itself: under the test
	// it fails, or on the messages.
	Report(rec audit.Record, line string)
	// End ends the transaction; the attribution may let go of what it
	// held for the call (a test's end line). Called exactly once. A
	// Report may still come after it (a redirected DNS socket's later
	// queries): the attribution then does what it still can with it.
	End()
}

// Generic is the attribution of any command (generic mode): no test, the
// process is named, and denial lines go to Messages.
type Generic struct{ Messages io.Writer }

// Begin implements Attribution.
func (g Generic) Begin(*decision.Call) Transaction { return genericTransaction{g.Messages} }

type genericTransaction struct{ messages io.Writer }

func (genericTransaction) Who() Who { return Who{} }
func (genericTransaction) End()     {}

func (tx genericTransaction) Report(rec audit.Record, line string) {
	if line != "" && rec.Decision == audit.Denied && tx.messages != nil {
		fmt.Fprintln(tx.messages, line)
	}
}
