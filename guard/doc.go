// Package guard joins the pieces of a decision: it implements the
// engines' decision.Decider by classifying each destination a call names,
// asking the policy, asking attribution which test is calling, and keeping
// the audit trail and the counts. It decides on the plain fields of a
// decision.Call and never reads /proc or holds a descriptor: who called
// and the socket's type come from Call.Task, asked only for audited calls
// (allowed classes take a fast path: no Task, no record, just a count), so
// its tests need no kernel.
//
// The words of a blocked attempt ("nettrap: Outbound network blocked: …")
// come from its audit record (audit.Message), so that the summaries
// (ghactions) word it the same without importing guard.
package guard
