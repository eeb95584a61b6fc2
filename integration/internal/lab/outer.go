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
// them), nettrap's one-line notice of its fallback to the ptrace engine
// (ParentNotice) from a run's output (as printed, or as a test2json
// output event), so that the tests of everything else see what they see
// under the notify engine.
func DropNotice(s string) string { return dropLines(s, ParentNotice) }

// DropSealedNotice is DropNotice for SealedPtraceNotice, which the
// ptrace engine brings to a --sealed run; for the tests of what else
// such a run prints (TestSealedNetns checks the notice itself).
func DropSealedNotice(s string) string { return dropLines(s, SealedPtraceNotice) }

// dropLines removes, under the parent variants, the lines that start
// with notice, or output events whose output does.
func dropLines(s, notice string) string {
	if v, _ := CurrentVariant(); ParentTraps[v] == "" {
		return s
	}
	var b strings.Builder
	for line := range strings.Lines(s) {
		if !strings.HasPrefix(line, notice) && !strings.Contains(line, `"Output":"`+notice) {
			b.WriteString(line)
		}
	}
	return b.String()
}
