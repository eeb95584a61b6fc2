package gocmd

import (
	"os"
	"testing"
)

// matchGolden compares got with the golden file, first rewriting it with
// got when update is set (the flag named flag), and reports a difference
// as what differs, with more (the run's whole output, say) after it.
func matchGolden(t testing.TB, golden, got string, update bool, flag, what, more string) {
	t.Helper()
	if update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("%s differ from %s (-%s rewrites it)\ngot:\n%s\nwant:\n%s%s", what, golden, flag, got, want, more)
	}
}
