package run

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/nettrap/nettrap/procfs"
	"github.com/nettrap/nettrap/tmpdir"
)

// TestRunDirOwner: a run's directory names its owner while the run lasts,
// so a later run leaves it alone; release (the run ends and keeps its log
// for the summary) drops the name, so the kept log is never taken for a
// killed run's.
func TestRunDirOwner(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	l, err := prepareAuditLog("")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(l.dir, tmpdir.OwnerFile))
	if err != nil || !strings.HasPrefix(string(b), strconv.Itoa(os.Getpid())+" ") {
		t.Fatalf("owner file %q (%v), want this process", b, err)
	}
	if removed := tmpdir.RemoveStale(tmp, "nettrap-run-"); len(removed) != 0 {
		t.Errorf("a live run's directory was removed: %q", removed)
	}
	l.release()
	if _, err := os.Stat(filepath.Join(l.dir, tmpdir.OwnerFile)); !os.IsNotExist(err) {
		t.Errorf("owner file after release: %v", err)
	}
	if _, err := os.Stat(l.path); err != nil {
		t.Errorf("the log after release: %v", err)
	}
}

// TestPrepareRemovesStale: a run's start clears what killed runs left.
func TestPrepareRemovesStale(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	stale := filepath.Join(tmp, "nettrap-run-killed")
	if err := os.Mkdir(stale, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stale, tmpdir.OwnerFile), []byte(deadOwner(t)), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := prepareAuditLog("")
	if err != nil {
		t.Fatal(err)
	}
	defer l.remove()
	if _, err := os.Lstat(stale); !os.IsNotExist(err) {
		t.Errorf("the killed run's directory is still there (%v)", err)
	}
}

// deadOwner is an owner file naming a process that has exited and been
// reaped.
func deadOwner(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("sleep", "0.01")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	start, err := procfs.StartTime(cmd.Process.Pid)
	ns, nerr := procfs.OwnPIDNamespace()
	if werr := cmd.Wait(); err != nil || nerr != nil || werr != nil {
		t.Fatal(err, nerr, werr)
	}
	return fmt.Sprintf("%d %d %s\n", cmd.Process.Pid, start, ns)
}
