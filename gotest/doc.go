// Package gotest knows Go test binaries: it recognizes them and names
// their package from their build info, runs them with -test.v=test2json
// in front of the user's arguments (see Rewrite), reads their stream to
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
package gotest
