package audit

import (
	"fmt"
	"strings"
)

// The wording of a blocked attempt, from its record: the "nettrap:
// Outbound network blocked: …" message lines guard shows (Message) and
// the start of every summary's line about a blocked attempt (Blocked,
// AtCollection; ghactions). It sits beside the record it words, so that
// whoever words a record needs no more than the record's package.

// Message is the one-line message for a denied (or would-be denied) attempt:
//
//	Outbound network blocked: connect tcp 203.0.113.7:443 (external) by pid 4242 curl
//
// byProcess names the process (generic mode); otherwise the test that
// was running ("during TestX"). When the caller's stack was read, the
// line goes on with where (wherePart): "at prices/client.go:31
// (prices.fetchQuote, called from prices_test.go:48)", and names the
// test whose goroutine made the call when that is another one. parallel is the flag an ambiguous line
// advises, ParallelGoTest or ParallelBinary.
func Message(r Record, byProcess bool, parallel string) string {
	byProcess = byProcess && len(r.Candidates) == 0
	op := r.Syscall
	if r.ABI != "" && r.ABI != "x86_64" && r.ABI != "aarch64" {
		op += " (" + r.ABI + " ABI)"
	}
	if r.SockType != "" {
		op += " " + r.SockType
	}
	line := Blocked(r.Decision, r.Lookup, op, r.Dest, r.Class) + whoPart(r, byProcess, parallel) + wherePart(r.Origin)
	if r.Lookup != "" {
		// A lookup's reason is always the same; the line ends with
		// what to do instead, after the part users match.
		return line + ": " + lookupRemedy(r, byProcess)
	}
	// The reason is shown unless it only repeats the class: an attempt
	// with no destination, advice (unspecified, dns), a join, a marker
	// ignored under --sealed all say more than the class.
	if r.Reason != "" && r.Reason != ClassReason(r.Class) {
		line += ": " + r.Reason
	}
	return line
}

// lookupRemedy is what to do about a blocked lookup, by who made it: a
// marker does not help at collection time, nor under --sealed (the only
// way a marked test's lookup is blocked), nor a process outside tests.
func lookupRemedy(r Record, byProcess bool) string {
	switch {
	case r.Test == Collection:
		return RemedyLookupCollection
	case len(r.Candidates) > 1:
		return RemedyLookupTest
	case byProcess || r.Test == "":
		return RemedyLookupProcess
	case r.Marked:
		return RemedyLookupSealed
	}
	return RemedyLookupTest
}

// Blocked is how every message about a blocked attempt starts, in
// Message and in the run's summaries (ghactions): "Outbound network blocked: connect
// tcp 203.0.113.7:443 (external)", "audit: would block: …" for a would-be
// denial. A DNS query nettrap's sinkhole read says what was looked up,
// which says more than the call and the class: "DNS lookup blocked:
// example.com". It names the name alone: one lookup is many queries (A
// and AAAA, at each nameserver, tried again), which differ only in the
// type and the nameserver, and are one event for the user, one line (a
// line repeated for the same test is shown once: gotest's Tracker); the
// record of each query keeps its type and nameserver.
func Blocked(d Decision, lookup, operation, dest, class string) string {
	switch {
	case lookup == LookupMalformed:
		// No name to name: where it went says more.
		return "DNS lookup blocked: " + lookup + " via " + dest
	case lookup != "":
		return "DNS lookup blocked: " + LookupName(lookup)
	}
	head := "Outbound network blocked: "
	if d == WouldDeny {
		head = "audit: would block: "
	}
	if dest != "" {
		return fmt.Sprintf("%s%s %s (%s)", head, operation, dest, class)
	}
	return head + operation
}

// LookupMalformed is the Lookup of a query nettrap's sinkhole could not
// read a question from.
const LookupMalformed = "(malformed query)"

// LookupName is the name a record's Lookup asks for, without its query
// type: "example.com" for "AAAA example.com"; what could be read of a
// malformed query (LookupMalformed) as it is.
func LookupName(lookup string) string {
	typ, name, ok := strings.Cut(lookup, " ")
	if !ok || typ == "" || !isQueryType(typ) {
		return lookup
	}
	return name
}

// isQueryType tells whether s is a query type as dnssink names it: an
// IANA mnemonic (A, AAAA, TXT, NSEC3PARAM) or TYPEn, upper case letters
// and digits.
func isQueryType(s string) bool {
	for _, c := range s {
		if (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// The remedies of a blocked lookup's line, by who looked up: the other
// denials give advice in their reasons, but a lookup's reason is always
// the same (ReasonDNSRefused) and says what, not what to do.
const (
	RemedyLookupTest       = "mock the resolver or the client, or mark the test (docs/tests.md#the-marker)"
	RemedyLookupCollection = "mock the resolver or the client; no marker covers collection time (docs/tests.md#collection-time)"
	RemedyLookupSealed     = ReasonMarkerIgnored + "; mock the resolver or the client"
	RemedyLookupProcess    = "use addresses or /etc/hosts, or allow the nameserver with --allow CIDR:53 (docs/flags.md)"
)

// AtCollection says when an attempt at collection time was made.
const AtCollection = " at collection time (package init, TestMain, or between tests)"

// The flag that runs tests one at a time, as the user types it: advice
// in the test binary's words is wrong for a go test user, whose go
// command rejects -test.parallel.
const (
	ParallelGoTest = "-parallel=1"      // the tests were started by go test
	ParallelBinary = "-test.parallel=1" // a test binary run by hand
)

// whoPart says who made the attempt: " during TestX", " by pid N prog", …
func whoPart(r Record, byProcess bool, parallel string) string {
	switch {
	case len(r.Candidates) > 1:
		return fmt.Sprintf(" during one of %s (ambiguous: parallel tests were running; rerun with %s to pin it)", candidateList(r.Candidates), parallel)
	case r.Test == Collection:
		return AtCollection
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
