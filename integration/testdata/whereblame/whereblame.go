// Package whereblame is the fixture of which test a blocked attempt is
// blamed on, beside its location (issue 36): parallel tests, each
// pinned by its own goroutine's frames, a parallel test's subtest, and
// closures one test makes and stores that a later test calls from a
// goroutine. nettrap's integration tests compare the lines, audit
// records and annotations with where.golden (after package where's).
// Keep the line numbers stable: the golden file names them.
//
// Every dial here goes to a fake host of the integration sandbox
// (package where's helpers, package fx): outside it, they refuse.
package whereblame

import "example.com/fixtures/where"

// MakeDialer returns a dialer of port: small enough for the compiler to
// inline into its caller, which then names its closure after the
// calling test (whereblame.TestStoredA.MakeDialer.func1).
func MakeDialer(port int) func() {
	return func() { _ = where.Fetch(port) }
}
