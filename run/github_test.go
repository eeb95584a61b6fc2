package run

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/nettrap/nettrap/procfs"
)

// TestRemoveGoneStates: the state file of a live go command stays; one
// whose pid is gone, or was reused (another start time), goes; other
// files stay.
func TestRemoveGoneStates(t *testing.T) {
	dir := t.TempDir()
	start, err := procfs.StartTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	live := fmt.Sprintf("go-test-%d-%d", os.Getpid(), start)
	reused := fmt.Sprintf("go-test-%d-%d", os.Getpid(), start+1)
	gone := fmt.Sprintf("go-test-%d-%d", 1<<22+1, start) // above pid_max's limit
	for _, name := range []string{live, reused, gone, "other", "go-test-x-1"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	removeGoneStates(dir)
	for name, want := range map[string]bool{live: true, reused: false, gone: false, "other": true, "go-test-x-1": true} {
		_, err := os.Stat(filepath.Join(dir, name))
		if got := err == nil; got != want {
			t.Errorf("%s kept: %v, want %v", name, got, want)
		}
	}
}
