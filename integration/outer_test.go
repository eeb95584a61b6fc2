package integration

import (
	"os"
	"strings"

	"github.com/nettrap/nettrap/integration/internal/lab"
	"github.com/nettrap/nettrap/procfs"
)

// dropOuterNettrapEnv: under a nettrap (nettrap's own suite run under
// nettrap), this binary inherits what that nettrap tells the nettraps it
// starts (its hub, its run, its flags as NETTRAP_* variables). The
// nettraps these tests start are nettraps of their own, not that one's
// inners: without this they would report to its hub instead of
// confining, and take its engine and flags. They run under its listener
// instead: the engine variant is lab.VariantOuter.
func dropOuterNettrapEnv() {
	if os.Getenv("NETTRAP_HUB") == "" || !procfs.SeccompFiltered() {
		return
	}
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "NETTRAP_") && k != lab.VariantEnv {
			os.Unsetenv(k)
		}
	}
	if os.Getenv(lab.VariantEnv) == "" {
		os.Setenv(lab.VariantEnv, string(lab.VariantOuter))
	}
}
