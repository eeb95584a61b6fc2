package lab

import "testing"

// The skips of the integration tests under the engine variants, each
// saying why (packages integration and integration/gocmd).

// NotifyOnly skips t under every engine variant, saying why: what t
// checks only the notify engine can do. Keep the callers few, each with
// its reason.
func NotifyOnly(t testing.TB, why string) {
	t.Helper()
	SkipUnder(t, why, VariantPtrace, VariantParent, VariantParentConnect, VariantOuter)
}

// OwnListener skips t under an outer nettrap (VariantOuter), saying why:
// t installs a seccomp listener of its own above nettrap (parentlisten)
// or asks for the notify engine, and a filter chain has one listener,
// which is the outer nettrap's there.
func OwnListener(t testing.TB) {
	t.Helper()
	SkipUnder(t, "needs a seccomp listener of its own (parentlisten, or nettrap's notify engine), and under an outer nettrap the filter chain's one listener is that nettrap's", VariantOuter)
}

// BareUnderOuter skips t under an outer nettrap (VariantOuter), saying
// why: t compares nettrap's runs with the kernel's own behaviour in a
// run without nettrap, and there every call nettrap traps goes to the
// outer nettrap's listener first (emulated by it, or skipped at its
// decision), so no run of the tree is bare.
func BareUnderOuter(t testing.TB) {
	t.Helper()
	SkipUnder(t, "compares with a bare run, and under an outer nettrap no run is bare (that nettrap's listener takes every call nettrap traps)", VariantOuter)
}

// OuterDenies skips t under an outer nettrap (VariantOuter), saying why:
// what t shows leaking without nettrap is a call the outer nettrap
// denies by design, in any namespace (what, e.g. "socket(AF_XDP)"), so
// the unguarded control cannot run there, and the outer nettrap fails
// the test for trying.
func OuterDenies(t testing.TB, what string) {
	t.Helper()
	SkipUnder(t, "its unguarded control makes "+what+", which an outer nettrap denies by design in any namespace (and fails the test for)", VariantOuter)
}

// OuterUserns skips t under an outer nettrap (VariantOuter), saying why:
// what t's unguarded control does needs a capability of the initial user
// namespace (what), and an outer nettrap runs the test binary as root in
// a user namespace of its own.
func OuterUserns(t testing.TB, what string) {
	t.Helper()
	SkipUnder(t, "its unguarded control needs "+what+" in the initial user namespace, and an outer nettrap runs the test binary in a user namespace of its own", VariantOuter)
}

// SlowUnderOuter skips t under an outer nettrap (VariantOuter), saying
// why: t runs go commands that build under inner nettraps, which there
// stop every system call of the compiler at its entry (the ptrace engine
// under a listener that traps what it decides), and takes minutes, past
// what the package may spend there (go test's default 10-minute
// timeout). Only the heaviest such tests, each measured (issue 37); the
// bare run checks them.
func SlowUnderOuter(t testing.TB, took string) {
	t.Helper()
	SkipUnder(t, "its go commands build under inner nettraps stopping every system call at entry, which took "+took+" under an outer nettrap, past the package's 10-minute budget there; the bare run checks it", VariantOuter)
}
