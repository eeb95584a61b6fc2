// Package hub lets one outer nettrap, which confines a whole process tree
// (`nettrap -- make test`), attribute calls to Go tests run by inner
// nettraps inside that tree (started by the go command through -exec).
//
// The kernel allows one seccomp notification listener per filter stack,
// so an inner nettrap cannot supervise its test binary itself: the outer
// one does, and asks the inner, over a Unix socket, which test is running
// (the inner reads the binary's test2json stream). The outer decides and
// writes the audit trail; the inner only renders the test output.
//
// Protocol: JSON objects, one a line, over a stream socket.
//
//	inner → outer  {"op":"register","package":P,"argv0":A}  answered {"op":"challenge","nonce":N} or {"op":"error","error":E}
//	inner → outer  {"op":"confirm","nonce":N}               answered {"op":"ok"} or {"op":"error","error":E}
//	inner → outer  {"op":"record","record":R}               not answered (stale markers)
//	outer → inner  {"op":"who","id":N}                      answered {"op":"who","id":N,"who":W}
//	outer → inner  {"op":"verdict","id":N,"reports":[…]}     answered {"op":"released","id":N}
//
// Only the process that connected may write on its connection (the kernel
// names the writer of every read), and it must run the nettrap executable
// at every message; see peer.go. In sealed mode the outer's policy ignores
// an inner's "marked": inners name tests, they never allow.
//
// Between "who" and "released" the inner holds the rendering of test
// results, so that the verdict still reaches the test's report. Only the
// outer asks questions after registration, so neither side ever waits on
// the other while being waited on. The outer bounds every wait; an inner
// that does not answer in time is dropped and its calls count as unmarked
// (fail closed).
//
// Under `nettrap -- go test` with the test cache the go command itself is
// confined (Server.IsGo): a call from under it and under no inner is the
// toolchain's (module downloads), allowed by the policy and audited; one
// from under an inner that is gone, or from a process that left the go
// command's tree, is not.
package hub
