package lab

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nettrap/nettrap/supervisor"
)

// Variant is an engine variant of the integration tests, chosen with
// NETTRAP_TEST_ENGINE: every nettrap the tests start runs under it.
type Variant string

// The variants.
const (
	// VariantDefault: nettrap as it is (engine auto: notification here).
	VariantDefault Variant = ""
	// VariantPtrace: NETTRAP_ENGINE=ptrace for every run.
	VariantPtrace Variant = "ptrace"
	// VariantKernel: NETTRAP_ENGINE=kernel for every run: the sends are
	// decided by the kernel engine's cgroup programs (root, a kernel
	// whose cgroup programs can hold a call).
	VariantKernel Variant = "kernel"
	// VariantParent: every run under parentlisten trapping bind and
	// listen, as WSL2's init does; engine auto must fall back to ptrace,
	// whose probe sees the listener hide none of nettrap's calls: the
	// engine decides at seccomp stops (at syscall-entry stops under
	// --sealed).
	VariantParent Variant = "parent"
	// VariantParentConnect: parentlisten trapping connect, sendto and
	// sendmsg, the calls nettrap traps too: their USER_NOTIF outranks
	// nettrap's TRACE, so the engine decides at syscall-entry stops.
	VariantParentConnect Variant = "parent-connect"
	// VariantOuter: the test binary itself runs under nettrap (nettrap's
	// own suite under nettrap, .ci/run): every nettrap the tests start
	// finds that one's listener above it, trapping what nettrap traps,
	// and falls back to ptrace at syscall-entry stops, as under
	// parent-connect. The integration tests' TestMain sets it there.
	VariantOuter Variant = "nettrap"
)

// VariantEnv is the variable that names the variant.
const VariantEnv = "NETTRAP_TEST_ENGINE"

// ParentTraps are the calls parentlisten traps under each parent variant.
var ParentTraps = map[Variant]string{
	VariantParent:        "bind,listen",
	VariantParentConnect: "connect,sendto,sendmsg",
	VariantOuter:         "connect,sendto,sendmsg,sendmmsg and the rest nettrap traps",
}

// CurrentVariant reads NETTRAP_TEST_ENGINE; an unknown value is an error.
func CurrentVariant() (Variant, error) {
	v := Variant(os.Getenv(VariantEnv))
	switch v {
	case VariantDefault, VariantPtrace, VariantKernel, VariantParent, VariantParentConnect, VariantOuter:
		return v, nil
	}
	return v, fmt.Errorf("%s=%q: want empty, ptrace, kernel, parent, parent-connect or nettrap", VariantEnv, string(v))
}

// TestVariant is CurrentVariant for a test, which an unknown value fails.
func TestVariant(t testing.TB) Variant {
	t.Helper()
	v, err := CurrentVariant()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// SkipUnder skips t under the variants vs (the default one cannot be
// skipped), saying why: a test of what only the notify engine does.
func SkipUnder(t testing.TB, why string, vs ...Variant) {
	t.Helper()
	cur := TestVariant(t)
	for _, v := range vs {
		if v == cur && v != VariantDefault {
			t.Skipf("%s=%s: %s", VariantEnv, v, why)
		}
	}
}

// ParentNotice starts the line nettrap prints once when it falls back to
// the ptrace engine.
const ParentNotice = "nettrap: seccomp user notification cannot be used here"

// wrap writes, next to the real nettrap, the program the tests start as
// "nettrap" under variant v: a script that execs nettrap with
// NETTRAP_ENGINE=ptrace, or under parentlisten (which execs nettrap in
// turn). Both exec, so the tests see nettrap itself: its pid, its
// parent, its signals and exit status.
func wrap(dir, nettrap, parentlisten string, v Variant) (string, error) {
	var line string
	switch v {
	case VariantDefault:
		return nettrap, nil
	case VariantPtrace:
		line = "NETTRAP_ENGINE=ptrace; export NETTRAP_ENGINE; exec " + quote(nettrap) + ` "$@"`
	case VariantKernel:
		line = kernelWhereItServes + "exec " + quote(nettrap) + ` "$@"`
	case VariantOuter:
		line = "exec " + quote(nettrap) + ` "$@"` // the listener is above already
	default:
		line = fmt.Sprintf(`exec %s --trap %s -- %s "$@"`, quote(parentlisten), ParentTraps[v], quote(nettrap))
	}
	// nettrap warns of a NETTRAP_ variable it does not know.
	script := fmt.Sprintf("#!/bin/sh\n# nettrap under %s=%s (integration/internal/lab/engine.go)\nunset %s\n%s\n",
		VariantEnv, v, VariantEnv, line)
	path := filepath.Join(dir, "nettrap-"+string(v))
	return path, os.WriteFile(path, []byte(script), 0o755)
}

// kernelWhereItServes is the kernel variant's choice, in sh: the kernel
// engine for every run it serves (root in the initial user namespace
// with CAP_SYS_ADMIN and CAP_BPF, not --sealed, a user namespace for the
// command), and nettrap as it is for the others, which --engine=kernel
// would refuse to start.
const kernelWhereItServes = `use=yes
[ "$(id -u)" = 0 ] || use=no
capeff=$(sed -n 's/^CapEff:[[:space:]]*//p' /proc/self/status)
# CAP_SYS_ADMIN (21) and CAP_BPF (39)
[ $(( (0x$capeff >> 21) & (0x$capeff >> 39) & 1 )) = 1 ] || use=no
# and in the initial user namespace (PROC_USER_INIT_INO)
[ "$(readlink /proc/self/ns/user)" = "user:[4026531837]" ] || use=no
case "$NETTRAP_SEALED" in ""|0|false) ;; *) use=no ;; esac
[ "$NETTRAP_USERNS" = off ] && use=no
for a in "$@"; do
	case "$a" in
	--) break ;;
	--sealed|--sealed=true|--sealed=1|--userns=off) use=no ;;
	esac
done
if [ $use = yes ]; then NETTRAP_ENGINE=kernel; export NETTRAP_ENGINE; fi
`

// quote quotes s for sh.
func quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Tries scales a race test's number of tries (the escape matrix's
// swappers and flippers) to the variant: all of them under the default
// engine and under ptrace, whose decision paths they were sized for; a
// quarter under parent (the ptrace engine's path again, with a listener
// above that hides none of its calls), under parent-connect (decided
// at syscall-entry stops) and under kernel (the sends' races are the
// kernel's own to close, and connects take the notify engine's path), a half under an outer nettrap, to keep CI
// within its budget beside the kernel matrix (.ci/run). Each variant
// still races hundreds of times, which unguarded leaks within.
func Tries(n int) int {
	switch Variant(os.Getenv(VariantEnv)) {
	case VariantParent, VariantParentConnect, VariantKernel:
		return n / 4
	case VariantOuter:
		return n / 2
	}
	return n
}

// UnderParent is argv under parentlisten (b.ParentListen) trapping traps,
// counting its notifications into the file count when it is not empty.
func UnderParent(b Bins, traps, count string, argv ...string) []string {
	pl := []string{b.ParentListen, "--trap", traps}
	if count != "" {
		pl = append(pl, "--count", count)
	}
	return append(append(pl, "--"), argv...)
}

// NoticeCount is how many times nettrap announced the ptrace fallback
// (ParentNotice) in out.
func NoticeCount(out string) int {
	n := 0
	for line := range strings.SplitSeq(out, "\n") {
		if strings.HasPrefix(line, ParentNotice) {
			n++
		}
	}
	return n
}

// KernelEngine tells whether nettrap's kernel engine can run here, and
// why not: it needs root, and a kernel whose cgroup programs can hold a
// call (supervisor.ProbeKernel).
func KernelEngine() error {
	return supervisor.ProbeKernel()
}
