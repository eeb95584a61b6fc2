package lab

import (
	"os"
	"strings"

	"github.com/nettrap/nettrap/procfs"
)

// DropOuterNettrapEnv is for a test binary's TestMain, first thing (the
// integration and demo tests): under a nettrap (nettrap's own suite run
// under nettrap), the binary inherits what that nettrap tells the
// nettraps it starts (its hub, its run, its flags as NETTRAP_*
// variables). The nettraps these tests start are nettraps of their own,
// not that one's inners: without this they would report to its hub
// instead of confining (and print nothing of their own), and take its
// engine and flags. They run under its listener instead: the engine
// variant is VariantOuter.
func DropOuterNettrapEnv() {
	if os.Getenv("NETTRAP_HUB") == "" || !procfs.SeccompFiltered() {
		return
	}
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "NETTRAP_") && k != VariantEnv {
			os.Unsetenv(k)
		}
	}
	if os.Getenv(VariantEnv) == "" {
		os.Setenv(VariantEnv, string(VariantOuter))
	}
}

// SealedPtraceNotice starts the line nettrap prints once when --sealed
// runs without a network namespace of the command's own because the
// ptrace engine cannot hand sockets in (run/sealednetns.go).
const SealedPtraceNotice = "nettrap: --sealed without a network namespace of the command's own (the ptrace engine cannot hand sockets in)"

// DropNotice removes, under the parent variants (VariantOuter among
// them), nettrap's one-line notices of its fallback to the ptrace engine
// (ParentNotice, and SealedPtraceNotice, which that engine brings) from
// a run's output (as printed, or as a test2json output event), so that
// the tests of everything else see what they see under the notify
// engine.
func DropNotice(s string) string {
	if v, _ := CurrentVariant(); ParentTraps[v] == "" {
		return s
	}
	var b strings.Builder
	for line := range strings.Lines(s) {
		notice := false
		for _, n := range []string{ParentNotice, SealedPtraceNotice} {
			notice = notice || strings.HasPrefix(line, n) || strings.Contains(line, `"Output":"`+n)
		}
		if !notice {
			b.WriteString(line)
		}
	}
	return b.String()
}
