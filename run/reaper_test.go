package run

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/nettrap/nettrap/supervisor"
)

// The run's command is in the reaper's process group, and the reaper is
// this test binary re-exec'd as nettrap-reaper and dispatched as that
// personality by TestMain (not its tests run again); under the ptrace
// engine the stub is this binary too, dispatched the same way.
func TestReaperPersonalityLeadsTheGroup(t *testing.T) {
	needEngine(t)
	if inTerminalForeground() {
		t.Skip("in a terminal's foreground a run has no reaper")
	}
	for _, c := range []struct {
		name   string
		engine supervisor.EngineMode
	}{{"auto", supervisor.EngineAuto}, {"ptrace", supervisor.EnginePtraceOnly}} {
		engine := c.engine
		t.Run(c.name, func(t *testing.T) {
			if engine == supervisor.EnginePtraceOnly {
				if _, err := supervisor.ChooseEngine(engine); errors.Is(err, supervisor.ErrUnsupported) {
					t.Skipf("no ptrace engine here: %v", err)
				}
			}
			t.Setenv("TMPDIR", t.TempDir())
			dir := t.TempDir()
			out := filepath.Join(dir, "leader")
			// Field 5 of /proc/PID/stat is the process group (sh's comm
			// has no space to shift it).
			script := `read -r _ _ _ _ pgrp _ </proc/$$/stat && cat /proc/$pgrp/cmdline >"$1"`
			err := Run(Options{Kind: Command, Argv: []string{"sh", "-c", script, "sh", out}, Engine: engine,
				AuditLog: filepath.Join(dir, "audit.jsonl"), Summary: filepath.Join(dir, "summary.txt"),
				Emulate: supervisor.EmulateOff, Names: flagNames{}})
			if err != nil {
				t.Fatalf("Run = %v", err)
			}
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := string(b), ReaperArgv0+"\x00"; got != want {
				t.Errorf("the command's group leader runs %q, want %q (the reaper)", got, want)
			}
		})
	}
}
