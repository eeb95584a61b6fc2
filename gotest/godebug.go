package gotest

import "strings"

// Ancestors is how many of a goroutine's creators the runtime of a test
// binary nettrap runs keeps, with the stack each had at its go
// statement (GODEBUG=tracebackancestors): what ties a call made in a
// goroutine whose creators have exited to the test that started them
// (package ancestry; docs/tests.md, "Which test made a call"). Measured
// (docs/performance.md): a go statement costs some 1.3µs and 330 bytes
// more, Go's net/http suite the same time within noise.
const Ancestors = "8"

// Env is environ for the test binary: GODEBUG with
// tracebackancestors=Ancestors, unless the user's GODEBUG already sets
// it (tracebackancestors=0 turns it off).
func Env(environ []string) []string {
	var godebug string
	out := make([]string, 0, len(environ)+1)
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, "GODEBUG="); ok {
			godebug = v
			continue
		}
		out = append(out, kv)
	}
	for _, kv := range strings.Split(godebug, ",") {
		if k, _, _ := strings.Cut(strings.TrimSpace(kv), "="); k == "tracebackancestors" {
			return environ
		}
	}
	if godebug != "" {
		godebug += ","
	}
	return append(out, "GODEBUG="+godebug+"tracebackancestors="+Ancestors)
}
