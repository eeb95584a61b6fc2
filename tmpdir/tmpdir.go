// Package tmpdir makes nettrap's private temporary directories (a run's
// audit log, the hub's socket) so that those of a nettrap killed by a
// signal, which cannot remove them, are removed by the next one: each
// directory names its owner while it lasts, and Make removes those of
// its kind whose owner is gone. A directory its owner gave up to keep
// (Release: a log the run's summary names) stays until Keep later ones
// of its kind were given up; Make then removes it. It never removes a
// directory of another user, one with neither an owner file nor a kept
// mark (not made by this package, or by an older nettrap), or one whose
// owner may still run.
package tmpdir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/nettrap/nettrap/procfs"
)

// OwnerFile, in a directory Make made, names the nettrap that owns it:
// "PID STARTTIME PIDNS", the start time telling a reused pid apart and
// the pid namespace telling whose pids these are.
const OwnerFile = "owner"

// Make removes the directories of killed nettraps named prefix* in the
// temporary directory, then makes a new one (mode 0700) owned by this
// process. A directory to keep after the process ends (a log the summary
// names) must be given up with Release.
func Make(prefix string) (string, error) {
	RemoveStale(os.TempDir(), prefix)
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return "", err
	}
	writeOwner(dir)
	return dir, nil
}

// KeptFile, in a directory given up with Release, marks it as kept:
// its time is when it was given up.
const KeptFile = "kept"

// Keep is how many kept directories of a kind stay: the logs of the
// last runs, which their summaries named, are there to be read (nettrap
// report) after the run; older ones go when a later nettrap of the kind
// starts (Make), so that a machine that runs tests all day does not
// gather them for good. A log to keep longer is one the user names.
const Keep = 10

// Release gives up dir, which then stays, with no owner (no later
// nettrap takes it for a killed one's), until Keep later directories of
// its kind were given up (see RemoveStale).
func Release(dir string) error {
	if err := os.WriteFile(filepath.Join(dir, KeptFile), nil, 0o600); err != nil {
		return fmt.Errorf("release %s: %w", dir, err)
	}
	if err := os.Remove(filepath.Join(dir, OwnerFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("release %s: %w", dir, err)
	}
	return nil
}

// owner is what an owner file says.
type owner struct {
	pid   int
	start uint64
	pidNS string
}

// selfOwner is this process as an owner.
func selfOwner() (owner, error) {
	start, err := procfs.StartTime(os.Getpid())
	if err != nil {
		return owner{}, fmt.Errorf("own start time: %w", err)
	}
	ns, err := procfs.OwnPIDNamespace()
	if err != nil {
		return owner{}, fmt.Errorf("own pid namespace: %w", err)
	}
	return owner{os.Getpid(), start, ns}, nil
}

func (o owner) String() string { return fmt.Sprintf("%d %d %s\n", o.pid, o.start, o.pidNS) }

func parseOwner(s string) (owner, error) {
	var o owner
	if n, err := fmt.Sscanf(s, "%d %d %s", &o.pid, &o.start, &o.pidNS); err != nil || n != 3 || o.pid <= 0 {
		return owner{}, fmt.Errorf("malformed owner %q", s)
	}
	return o, nil
}

// writeOwner names this process as the owner of dir. Without it the
// directory is only never removed by another nettrap: not worth failing
// for.
func writeOwner(dir string) {
	if o, err := selfOwner(); err == nil {
		os.WriteFile(filepath.Join(dir, OwnerFile), []byte(o.String()), 0o600)
	}
}

// gone reports whether o's process is certainly no more: its pid names no
// process, a zombie, or a process started later (the pid was reused).
// Whatever cannot be told (another pid namespace, an unreadable /proc)
// counts as alive.
func (o owner) gone(selfNS string) bool {
	if o.pidNS != selfNS {
		return false
	}
	start, err := procfs.StartTime(o.pid)
	if errors.Is(err, fs.ErrNotExist) {
		return true
	}
	return err == nil && (start != o.start || procfs.Exited(o.pid))
}

// RemoveStale removes the directories prefix* in tmp left by nettraps
// that were killed (this user's, whose owner file names a process that
// is gone) and the kept ones (Release) older than the Keep newest. It
// returns the directories removed.
func RemoveStale(tmp, prefix string) []string {
	self, err := selfOwner()
	if err != nil {
		return nil
	}
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return nil
	}
	var removed []string
	var kept []keptDir
	for _, e := range entries {
		dir := filepath.Join(tmp, e.Name())
		if !strings.HasPrefix(e.Name(), prefix) || !ours(dir) {
			continue
		}
		if t, ok := keptSince(dir); ok {
			kept = append(kept, keptDir{dir, t})
			continue
		}
		if stale(dir, self.pidNS) && os.RemoveAll(dir) == nil {
			removed = append(removed, dir)
		}
	}
	return append(removed, removeOldKept(kept)...)
}

// keptDir is a kept directory and when it was given up.
type keptDir struct {
	dir   string
	since time.Time
}

// removeOldKept removes the kept directories but the Keep newest.
func removeOldKept(kept []keptDir) []string {
	slices.SortFunc(kept, func(a, b keptDir) int { return b.since.Compare(a.since) })
	var removed []string
	for _, k := range kept[min(Keep, len(kept)):] {
		if os.RemoveAll(k.dir) == nil {
			removed = append(removed, k.dir)
		}
	}
	return removed
}

// ours: dir is a directory of this user, not a link.
func ours(dir string) bool {
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}

// keptSince tells whether dir was given up with Release, and when: it
// has a kept mark and no owner.
func keptSince(dir string) (time.Time, bool) {
	fi, err := os.Lstat(filepath.Join(dir, KeptFile))
	if err != nil || !fi.Mode().IsRegular() {
		return time.Time{}, false
	}
	if _, err := os.Lstat(filepath.Join(dir, OwnerFile)); !errors.Is(err, fs.ErrNotExist) {
		return time.Time{}, false
	}
	return fi.ModTime(), true
}

// stale: dir (ours) has an owner file whose process is gone.
func stale(dir, selfNS string) bool {
	b, err := os.ReadFile(filepath.Join(dir, OwnerFile))
	if err != nil {
		return false // kept by an older nettrap, or not ours
	}
	o, err := parseOwner(string(b))
	return err == nil && o.gone(selfNS)
}
