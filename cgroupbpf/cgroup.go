package cgroupbpf

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/procfs"
)

// MakeCgroup creates a child cgroup of this process's own (cgroup v2),
// named prefix and a number unique to this process, for a command to
// start in; remove takes it away once the command has exited.
func MakeCgroup(prefix string) (dir string, remove func(), err error) {
	own, err := procfs.OwnCgroup2()
	if err != nil {
		return "", nil, err
	}
	dir = filepath.Join(own, fmt.Sprintf("%s-%d-%d", prefix, os.Getpid(), cgroups.Add(1)))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", nil, fmt.Errorf("make a cgroup: %w", err)
	}
	return dir, func() { RemoveCgroup(dir) }, nil
}

// cgroups numbers this process's cgroups.
var cgroups atomic.Int64

// RemoveCgroup removes dir, retrying for a while on EBUSY: a command
// that was just reaped can still count in its cgroup until the kernel has
// let go of its tasks.
func RemoveCgroup(dir string) {
	for i := 0; i < 100; i++ {
		if err := os.Remove(dir); !errors.Is(err, unix.EBUSY) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// RemoveStale removes the empty cgroups MakeCgroup(prefix) made for
// processes that are gone (a nettrap killed before it could, or one
// whose tree left a daemon that has exited since). One that still has a
// process keeps it, and its programs.
func RemoveStale(prefix string) {
	own, err := procfs.OwnCgroup2()
	if err != nil {
		return
	}
	entries, err := os.ReadDir(own)
	if err != nil {
		return
	}
	for _, e := range entries {
		pid, ok := madeBy(e.Name(), prefix)
		if !ok || !e.IsDir() || pid == os.Getpid() || unix.Kill(pid, 0) != unix.ESRCH {
			continue
		}
		os.Remove(filepath.Join(own, e.Name())) // EBUSY: not empty
	}
}

// madeBy reads the pid in a name MakeCgroup(prefix) gave: prefix-PID-N.
func madeBy(name, prefix string) (pid int, ok bool) {
	rest, ok := strings.CutPrefix(name, prefix+"-")
	if !ok {
		return 0, false
	}
	p, n, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, false
	}
	// ParseUint takes digits only: no sign, no space.
	pid64, err := strconv.ParseUint(p, 10, 31)
	if _, nerr := strconv.ParseUint(n, 10, 63); err != nil || nerr != nil || pid64 == 0 {
		return 0, false
	}
	return int(pid64), true
}
