// Package policy decides network attempts: allowed classes pass, --allow
// rules and marked tests pass with an audit record, everything else is
// denied (or, in audit mode, allowed and recorded as would-deny). It is
// pure: the supervisor and the attribution layer give it the facts.
package policy
