// Package guard joins the pieces of a decision: it implements the
// engines' decision.Decider by classifying each destination a call names,
// asking the policy, asking attribution which test is calling, and keeping
// the audit trail and the counts. It decides on the plain fields of a
// decision.Call and never reads /proc or holds a descriptor: who called
// and the socket's type come from Call.Task, asked only for audited calls
// (allowed classes take a fast path: no Task, no record, just a count), so
// its tests need no kernel.
//
// The caller's stack comes from Call.Task too, when it is a
// decision.StackReader, once per call and only for a call that leaves a
// record (blame.go): the record gets where (the first frame in the
// module under test), the test function's frame it came through, the
// goroutine's entry, the whole stack, and started_by when the stack shows
// another test's goroutine, which the attribution then fails instead of
// the test that was running. Nothing is blamed on timing.
//
// The words of a blocked attempt ("nettrap: Outbound network blocked: …")
// come from its audit record (audit.Message), so that the summaries
// (ghactions) word it the same without importing guard.
package guard
