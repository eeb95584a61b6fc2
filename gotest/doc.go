// Package gotest knows Go test binaries and the go command.
//
// The go command (gocmd.go): where "test" is in `go [-C dir] test …`, the
// -exec flag nettrap adds (on the command line, or through GOFLAGS in a
// tree that runs go test itself) and the user's own -exec, which would
// silently replace it, and the flags (-c, -n) that make go test run no
// test binary.
//
// Test binaries: gotest recognizes them and names
// their package from their build info, runs them with -test.v=test2json
// in front of the user's arguments and in place of the user's own -test.v
// when that is certainly the one in effect (see Rewrite), reads their stream to
// know which test is running at every intercepted call (attribution),
// turns nettrap's denials into failures of the test that made the
// attempt, reports stale markers, and renders the stream back in the mode
// the user asked for (see teststream).
//
// Attribution: when a call arrives, the thread that made it is stopped in
// the kernel and has already written everything it printed before; the
// pipe is drained into the parser before deciding, so for sequential tests
// the running test is known exactly. With t.Parallel tests the candidates
// are the running tests with no running subtest; a call is allowed only if
// every candidate is marked, and a denial fails them all. No running test
// (package init, TestMain before or after m.Run, between tests) is
// collection time: never marked, and a denial fails the package.
//
// What the stream knows is which test was running, not whose code made
// the call: a goroutine that outlived its test is seen in whatever test
// runs next, and parallel tests run at once. The caller's stack tells
// more (guard reads it, when the engine can, for denied and audited
// attempts): a running test's own goroutine pins the call to it among
// parallel tests (the record's Test, Candidates narrowed); another
// goroutine of the test binary is tied to the test whose goroutine
// started it, through its creators (package ancestry, read for the
// binary's own process, Who.BinaryPID, which Started gives the
// tracker): a running test's pins it, a test that is not running gets
// the verdict (audit.Record.StartedBy) if still active (Who.Active),
// else the package; none tied to no test (audit.Record.Unowned), and
// the package fails, never the test that happened to run. Test
// binaries run with GODEBUG=tracebackancestors (Env), so that exited
// creators are known.
//
// With -v or -json, a verdict's line is followed by the caller's stack
// (one frame a line), and a would-be denial's line (--mode=audit) goes
// into the test's output without failing it (Who.ShowsAudit).
//
// The marker: t.Attr("nettrap", "network") (the stream's === ATTR line),
// or t.Log("nettrap:network") for modules of any go line (a line of the
// test's own output in t.Log's frame, teststream.LogLine; see
// Tracker.logMarker for what printing cannot forge).
//
// Findings about tests: a marked test that made no attempt (stale marker)
// gets a note; a marker of an unknown value (attribute or logged) fails
// its test. Finish returns both as audit records (stale-marker,
// bad-marker).
//
// -test.failfast: the binary does not know that nettrap failed a test, so
// it would start the next one. With FailFast(args) true, the tracker
// stops the binary (its caller kills it) when a test starts after a test
// nettrap failed has ended, renders the rest as the binary would have
// ended (parents of the failed test fail, final FAIL), and says so in a
// note. TestMain's code after m.Run does not run then. Binary carries
// the stop to the process its caller started (Binary.Started), through
// os.Process, which signals by pidfd.
package gotest
