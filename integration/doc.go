// Package integration holds nettrap's end-to-end tests: real programs (the
// victim in internal/victim, Go test binaries) run under the real nettrap
// binary, inside a private network namespace (internal/sandbox) whose only
// "remote" hosts are recording fakes (internal/fakehost). The tests that
// run the go command are package integration/gocmd's; what both packages
// use to run nettrap is internal/harness.
//
// The harness tests (harness_test.go, victim_test.go) check the harness
// itself, without nettrap: every operation the victim knows really reaches a
// fake host when nothing guards it, so a guard that let one through would
// show up as a recorded leak.
package integration
