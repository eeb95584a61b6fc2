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
