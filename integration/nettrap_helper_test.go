package integration

import (
	"testing"

	"github.com/nettrap/nettrap/integration/internal/harness"
	"github.com/nettrap/nettrap/integration/internal/victimbuild"
)

// confinedVictim runs the victim under nettrap (extra flags first) and
// returns nettrap's run and the victim's result.
func confinedVictim(t *testing.T, flags []string, args ...string) (harness.Run, victimResult) {
	t.Helper()
	argv := append(append(append([]string{}, flags...), "--", victimbuild.Victim(t)), args...)
	run := harness.RunNettrap(t, argv...)
	// The victim exits 0; nettrap makes that 1 when it denied an attempt
	// (docs/audit.md#exit-status), and says so.
	want := 0
	if len(harness.BlockedLines(run.Stderr)) > 0 {
		want = 1
	}
	if run.Code != want {
		t.Fatalf("nettrap %q: exit %d, want %d\nstdout: %s\nstderr: %s", argv, run.Code, want, run.Stdout, run.Stderr)
	}
	return run, parseVictim(t, []byte(run.Stdout), run.Stderr)
}
