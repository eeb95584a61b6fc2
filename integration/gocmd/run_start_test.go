package gocmd

import (
	"strings"
	"testing"

	"github.com/nettrap/nettrap/integration/internal/runmod"
)

// TestRunGoTestOneProc: `nettrap -- go test` traps execve, and the go
// command's start is a vfork whose execve nettrap answers. With one P
// (GOMAXPROCS=1: one CPU, or a container's CPU limit) and no user
// namespace of the command's own (not root, or --userns=off), the forking
// thread held the only P and the answer never came: the run hung at
// start, SIGTERM included. It must start and finish.
func TestRunGoTestOneProc(t *testing.T) {
	for i := 0; i < 3; i++ {
		run := runModGoTest(t, runmod.Env("GOMAXPROCS=1"), []string{"--userns=off"}, "-count=1", "./clean/")
		if run.Code != 0 || !strings.Contains(run.Stdout, "ok  \t"+fixMod+"clean") {
			t.Fatalf("try %d: exit %d, want 0 and the clean package passing\nstdout: %s\nstderr: %s", i, run.Code, run.Stdout, run.Stderr)
		}
	}
}
