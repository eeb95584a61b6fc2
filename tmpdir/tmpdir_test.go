package tmpdir

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/nettrap/nettrap/procfs"
)

// fakeRunDir makes a run directory in tmp, as a run leaves it, with an
// owner file of the given content ("" for none).
func fakeRunDir(t *testing.T, tmp, name, owner string) string {
	t.Helper()
	dir := filepath.Join(tmp, name)
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "audit.jsonl"), []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if owner != "" {
		if err := os.WriteFile(filepath.Join(dir, OwnerFile), []byte(owner), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// ownerLine is the owner file of process pid, in this pid namespace.
func ownerLine(t *testing.T, pid int) string {
	t.Helper()
	start, err := procfs.StartTime(pid)
	if err != nil {
		t.Fatal(err)
	}
	ns, err := procfs.OwnPIDNamespace()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%d %d %s\n", pid, start, ns)
}

// deadOwner is the owner file of a process that has exited and been
// reaped.
func deadOwner(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("sleep", "0.01")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line := ownerLine(t, cmd.Process.Pid)
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	return line
}

// TestRemoveStaleRunDirs: the directories of killed runs go; a live run's
// directory, a finished run's kept log (no owner file), one of another pid
// namespace, another user's and anything not a run directory stay.
func TestRemoveStaleRunDirs(t *testing.T) {
	tmp := t.TempDir()
	live := exec.Command("sleep", "60")
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { live.Process.Kill(); live.Wait() })
	self := ownerLine(t, os.Getpid())
	var start uint64
	var ns string
	fmt.Sscanf(self, "%d %d %s", new(int), &start, &ns)
	gone := []string{
		fakeRunDir(t, tmp, "nettrap-run-dead", deadOwner(t)),
		// The pid is reused: a process of that number runs, started
		// later than the owner.
		fakeRunDir(t, tmp, "nettrap-run-reused", fmt.Sprintf("%d %d %s\n", os.Getpid(), start-1, ns)),
	}
	kept := []string{
		fakeRunDir(t, tmp, "nettrap-run-live", ownerLine(t, live.Process.Pid)),
		fakeRunDir(t, tmp, "nettrap-run-self", self),
		fakeRunDir(t, tmp, "nettrap-run-kept", ""),
		fakeRunDir(t, tmp, "nettrap-run-otherns", fmt.Sprintf("%d %d pid:[1]\n", 1<<22+7, start)),
		fakeRunDir(t, tmp, "nettrap-run-garbled", "not an owner\n"),
		fakeRunDir(t, tmp, "other-dead", deadOwner(t)),
	}
	if os.Getuid() == 0 {
		// Root can make a directory of another user: not ours to judge.
		d := fakeRunDir(t, tmp, "nettrap-run-nobody", deadOwner(t))
		if err := os.Chown(d, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		kept = append(kept, d)
	}
	removed := RemoveStale(tmp, "nettrap-run-")
	for _, d := range gone {
		if _, err := os.Lstat(d); !os.IsNotExist(err) {
			t.Errorf("%s: still there (%v), want it removed", filepath.Base(d), err)
		}
	}
	for _, d := range kept {
		if _, err := os.Lstat(filepath.Join(d, "audit.jsonl")); err != nil {
			t.Errorf("%s: %v, want it kept", filepath.Base(d), err)
		}
	}
	if len(removed) != len(gone) {
		t.Errorf("removed %q, want the %d stale ones", removed, len(gone))
	}
}

// TestMakeAndRelease: a directory names its owner while it lasts, so
// another nettrap leaves it alone; Release drops the name, so a kept log
// is never taken for a killed nettrap's.
func TestMakeAndRelease(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	stale := fakeRunDir(t, tmp, "nettrap-x-killed", deadOwner(t))
	dir, err := Make("nettrap-x-")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(stale); !os.IsNotExist(err) {
		t.Errorf("Make left the killed nettrap's directory (%v)", err)
	}
	b, err := os.ReadFile(filepath.Join(dir, OwnerFile))
	if err != nil || string(b) != ownerLine(t, os.Getpid()) {
		t.Fatalf("owner file %q (%v), want %q", b, err, ownerLine(t, os.Getpid()))
	}
	if removed := RemoveStale(tmp, "nettrap-x-"); len(removed) != 0 {
		t.Errorf("a live directory was removed: %q", removed)
	}
	if err := Release(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, OwnerFile)); !os.IsNotExist(err) {
		t.Errorf("owner file after Release: %v", err)
	}
}

// TestKeptDirsPruned: a run's kept log (Release) stays while it is one
// of the Keep newest of its kind; an older one goes at a later Make. A
// directory an older nettrap kept (no mark), a live run's, and one of
// another kind stay.
func TestKeptDirsPruned(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	base := time.Now().Add(-time.Hour)
	var kept []string
	for i := range Keep + 2 {
		dir, err := Make("nettrap-run-")
		if err != nil {
			t.Fatal(err)
		}
		if err := Release(dir); err != nil {
			t.Fatal(err)
		}
		// Given up a minute apart, the first the oldest.
		at := base.Add(time.Duration(i) * time.Minute)
		if err := os.Chtimes(filepath.Join(dir, KeptFile), at, at); err != nil {
			t.Fatal(err)
		}
		kept = append(kept, dir)
	}
	older := fakeRunDir(t, tmp, "nettrap-run-older-version", "")
	other := fakeRunDir(t, tmp, "nettrap-hub-kept", "")
	if err := os.WriteFile(filepath.Join(other, KeptFile), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	live, err := Make("nettrap-run-")
	if err != nil {
		t.Fatal(err)
	}
	for i, dir := range kept {
		_, err := os.Lstat(dir)
		if gone := i < 2; gone != os.IsNotExist(err) {
			t.Errorf("kept log %d of %d: gone %v (%v), want the %d newest kept", i+1, len(kept), os.IsNotExist(err), err, Keep)
		}
	}
	for _, d := range []string{older, other, live} {
		if _, err := os.Lstat(d); err != nil {
			t.Errorf("%s: %v, want it left", filepath.Base(d), err)
		}
	}
}
