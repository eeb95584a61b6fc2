package cgroupbpf

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
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
