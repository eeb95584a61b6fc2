package integration

import (
	"testing"

	"github.com/nettrap/nettrap/integration/internal/lab"
	"github.com/nettrap/nettrap/integration/internal/netsem"
	"github.com/nettrap/nettrap/integration/internal/sandbox"
	"github.com/nettrap/nettrap/integration/internal/victimbuild"
)

func TestMain(m *testing.M) {
	dropOuterNettrapEnv()
	sandbox.Main(m, victimbuild.Cleanup, lab.Cleanup, netsem.Cleanup, gocacheCleanup)
}
