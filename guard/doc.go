// Package guard joins the pieces of a decision: it implements the
// supervisor's Decider by classifying each destination a call names,
// asking the policy, asking attribution which test is calling, and keeping
// the audit trail, the "nettrap: Outbound network blocked" lines and the
// counts. Calls to allowed classes take a fast path: no /proc reads, no
// record, just a count.
package guard
