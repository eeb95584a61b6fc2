package run

import (
	"fmt"
	"io"

	"github.com/nettrap/nettrap/landlock"
)

// treeDomain is the Landlock domain the run puts its command in (package
// landlock): nothing in it can then read or write the memory of, trace,
// take descriptors from, or (Landlock ABI 6+) signal a process outside
// it: nettrap, its helpers, the go command of `nettrap -- go test`, the
// user's other processes. Under --sealed without one it says, on
// notices, what is then not promised; a nettrap that an outer one
// started leaves that to the outer.
func treeDomain(o Options, notices io.Writer) landlock.Plan {
	p := landlock.Choose(o.Policy.Sealed)
	if p.Kind == landlock.None && o.Policy.Sealed && o.OuterRun == "" {
		fmt.Fprintln(notices, sealedWithoutLandlock(p))
	}
	return p
}

// sealedWithoutLandlock is the notice of a --sealed run without a
// Landlock domain (docs/threat-model.md).
func sealedWithoutLandlock(p landlock.Plan) string {
	return "nettrap: --sealed without a Landlock domain (" + p.Why + "): the tests can write into processes of their user outside the tree where Yama allows it (kernel.yama.ptrace_scope 0, or no Yama), and signal them; nettrap and its helpers are out of their reach, and the go command's own calls are let through only until it starts its first test binary"
}
