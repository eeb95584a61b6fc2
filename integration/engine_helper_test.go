package integration

import (
	"testing"

	"github.com/nettrap/nettrap/integration/internal/lab"
	"github.com/nettrap/nettrap/integration/internal/victimbuild"
)

// nettrapBin is the nettrap every test starts: the binary itself, or under
// an engine variant (NETTRAP_TEST_ENGINE: ptrace, parent, parent-connect;
// see lab.Variant) the lab's script that starts it that way. The lab's
// own runs use lab.Bins.Nettrap, the same script.
func nettrapBin(t testing.TB) string {
	t.Helper()
	if lab.TestVariant(t) == lab.VariantDefault {
		return victimbuild.Nettrap(t)
	}
	return lab.Programs(t).Nettrap
}

// dropNotice removes, under the parent variants, nettrap's one-line notice
// of its fallback to the ptrace engine from a run's output (lab.DropNotice).
// The engine tests check the notice itself (TestEngineUnderParentListener).
func dropNotice(s string) string { return lab.DropNotice(s) }

// notifyOnly skips t under every engine variant, saying why: what t checks
// only the notify engine can do. Keep the callers few, each with its reason.
func notifyOnly(t testing.TB, why string) {
	t.Helper()
	lab.SkipUnder(t, why, lab.VariantPtrace, lab.VariantParent, lab.VariantParentConnect, lab.VariantOuter)
}

// ownListener skips t under an outer nettrap (lab.VariantOuter), saying
// why: t installs a seccomp listener of its own above nettrap
// (parentlisten) or asks for the notify engine, and a filter chain has
// one listener, which is the outer nettrap's there.
func ownListener(t testing.TB) {
	t.Helper()
	lab.SkipUnder(t, "needs a seccomp listener of its own (parentlisten, or nettrap's notify engine), and under an outer nettrap the filter chain's one listener is that nettrap's", lab.VariantOuter)
}

// bareUnderOuter skips t under an outer nettrap (lab.VariantOuter),
// saying why: t compares nettrap's runs with the kernel's own behaviour
// in a run without nettrap, and there every call nettrap traps goes to
// the outer nettrap's listener first (emulated by it, or skipped at its
// decision), so no run of the tree is bare.
func bareUnderOuter(t testing.TB) {
	t.Helper()
	lab.SkipUnder(t, "compares with a bare run, and under an outer nettrap no run is bare (that nettrap's listener takes every call nettrap traps)", lab.VariantOuter)
}

// outerDenies skips t under an outer nettrap (lab.VariantOuter), saying
// why: what t shows leaking without nettrap is a call the outer nettrap
// denies by design, in any namespace (what, e.g. "socket(AF_XDP)"), so
// the unguarded control cannot run there, and the outer nettrap fails
// the test for trying.
func outerDenies(t testing.TB, what string) {
	t.Helper()
	lab.SkipUnder(t, "its unguarded control makes "+what+", which an outer nettrap denies by design in any namespace (and fails the test for)", lab.VariantOuter)
}

// outerUserns skips t under an outer nettrap (lab.VariantOuter), saying
// why: what t's unguarded control does needs a capability of the initial
// user namespace (what), and an outer nettrap runs the test binary as
// root in a user namespace of its own.
func outerUserns(t testing.TB, what string) {
	t.Helper()
	lab.SkipUnder(t, "its unguarded control needs "+what+" in the initial user namespace, and an outer nettrap runs the test binary in a user namespace of its own", lab.VariantOuter)
}

// slowUnderOuter skips t under an outer nettrap (lab.VariantOuter),
// saying why: t runs go commands that build under inner nettraps, which
// there stop every system call of the compiler at its entry (the ptrace
// engine under a listener that traps what it decides), and takes
// minutes, past what the package may spend there (go test's default
// 10-minute timeout). Only the heaviest such tests, each measured (issue
// 37); the bare run checks them.
func slowUnderOuter(t testing.TB, took string) {
	t.Helper()
	lab.SkipUnder(t, "its go commands build under inner nettraps stopping every system call at entry, which took "+took+" under an outer nettrap, past the package's 10-minute budget there; the bare run checks it", lab.VariantOuter)
}
