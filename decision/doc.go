// Package decision is what an engine and a decider share, and nothing
// else: the call as the decoder saw it (Call, decoded once, plain data),
// what a decider may ask of the caller at a cost (Task), the answer
// (Answer, a sum type: allow, allow on a thread without capabilities,
// allow only to the confined tree's peers, deny, or deny and redirect),
// and the Decider interfaces.
//
// It is a leaf: guard, gotest, hub, testexec and policy name a call
// through it and never import an engine (package supervisor and below).
package decision
