package audit

// The audit vocabulary: every word a record's fields take from a fixed
// set is defined here, once, as the JSON form spells it. Other packages
// (policy, guard, gotest, report, ghactions) use these names.

// Decision is a record's "decision": what happened to an attempt, or
// which finding about a test the record is.
type Decision string

// What happened to an attempt.
const (
	Allowed   Decision = "allowed"
	Denied    Decision = "denied"
	WouldDeny Decision = "would-deny" // --mode=audit: enforce would deny
)

// Findings: records that are not attempts (no pid, tid or syscall).
const (
	// StaleMarker: a marked test made no network attempt.
	StaleMarker Decision = "stale-marker"
	// BadMarker: a test set the nettrap attribute to an unknown value
	// (MarkerValue); the test fails.
	BadMarker Decision = "bad-marker"
	// UnusedRule: an --allow-test rule (AllowTest) named no test that
	// made a network attempt in the whole run.
	UnusedRule Decision = "unused-rule"
	// NettrapError: an inner nettrap (the -exec of a run) could not do
	// its job, so that the run ends with status 125.
	NettrapError Decision = "nettrap-error"
)

// Collection is the Test of an attempt made at collection time: package
// init, TestMain, or between tests.
const Collection = "collection"

// Classes of attempts that name no destination (a destination's class is
// classify's: "external", "loopback", "other-family", …).
const (
	ClassInterfacePin = "interface-pin"
	ClassNetnsChange  = "netns-change"
	ClassBPFAttach    = "bpf-attach"
)

// Reasons that are fixed text, or built from one part.
const (
	// ReasonMarkerIgnored: a marked test's attempt denied under --sealed.
	ReasonMarkerIgnored = "the test's network marker is ignored under --sealed (only --allow rules open anything)"
	// ReasonStaleMarker is the reason of a StaleMarker finding.
	ReasonStaleMarker = "marked test made no network attempt"
	// ReasonUnusedRule is the reason of an UnusedRule finding.
	ReasonUnusedRule = "the --allow-test rule named no test that made a network attempt"
	// ReasonDNSRefused: a query nettrap's sinkhole read and refused.
	ReasonDNSRefused = "DNS query to a nameserver, answered REFUSED by nettrap: tests must not resolve names over the network (localhost comes from /etc/hosts)"
)

// ClassReason is the reason of a decision that only names the
// destination's class: a message line leaves it out, as the class is
// shown already.
func ClassReason(class string) string { return class + " destination" }
