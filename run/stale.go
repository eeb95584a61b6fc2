package run

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/nettrap/nettrap/procfs"
)

// A run killed by a signal cannot remove its directory. Each run's
// directory therefore names its owner while the run lasts, and the next
// run removes the directories whose owner is gone. A run that ends and
// keeps its log (the summary names it) drops the owner file first, so a
// kept log is never taken for a killed run's.

// runDirPattern names the run directories in the temporary directory.
const runDirPattern = "nettrap-run-"

// ownerFile, in a run's directory, names the nettrap that owns it: "PID
// STARTTIME PIDNS", the start time telling a reused pid apart and the pid
// namespace telling whose pids these are.
const ownerFile = "owner"

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
// directory is only never removed by another run: not worth failing for.
func writeOwner(dir string) {
	if o, err := selfOwner(); err == nil {
		os.WriteFile(filepath.Join(dir, ownerFile), []byte(o.String()), 0o600)
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

// removeStaleRunDirs removes the run directories in tmp left by runs
// that were killed: this user's, whose owner file names a process that
// is gone. It returns the directories removed.
func removeStaleRunDirs(tmp string) []string {
	self, err := selfOwner()
	if err != nil {
		return nil
	}
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return nil
	}
	var removed []string
	for _, e := range entries {
		dir := filepath.Join(tmp, e.Name())
		if strings.HasPrefix(e.Name(), runDirPattern) && staleRunDir(dir, self.pidNS) && os.RemoveAll(dir) == nil {
			removed = append(removed, dir)
		}
	}
	return removed
}

// staleRunDir: dir is a directory of this user (not a link) with an owner
// file whose process is gone.
func staleRunDir(dir, selfNS string) bool {
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() {
		return false
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != os.Getuid() {
		return false
	}
	b, err := os.ReadFile(filepath.Join(dir, ownerFile))
	if err != nil {
		return false // a finished run's kept log, or not ours
	}
	o, err := parseOwner(string(b))
	return err == nil && o.gone(selfNS)
}
