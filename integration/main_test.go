package integration

import (
	"testing"

	"github.com/nettrap/nettrap/integration/internal/lab"
	"github.com/nettrap/nettrap/integration/internal/netsem"
	"github.com/nettrap/nettrap/integration/internal/runmod"
	"github.com/nettrap/nettrap/integration/internal/sandbox"
	"github.com/nettrap/nettrap/integration/internal/victimbuild"
)

func TestMain(m *testing.M) {
	lab.DropOuterNettrapEnv()
	sandbox.Main(m, victimbuild.Cleanup, lab.Cleanup, netsem.Cleanup, runmod.Cleanup)
}
