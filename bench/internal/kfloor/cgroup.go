package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// cgroup2Mount returns where the cgroup v2 hierarchy is mounted (also in
// the hybrid layout, /sys/fs/cgroup/unified), from /proc/self/mountinfo.
func cgroup2Mount() (string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPER
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		fields := strings.Fields(pre)
		if ok && len(fields) >= 5 && strings.HasPrefix(post, "cgroup2 ") {
			return fields[4], nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", errors.New("no cgroup v2 hierarchy is mounted")
}

// ownCgroup2 is this process's cgroup v2 path ("0::/PATH" in
// /proc/self/cgroup).
func ownCgroup2() (string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(l, "0::"); ok {
			return p, nil
		}
	}
	return "", errors.New("/proc/self/cgroup names no cgroup v2 path")
}

// makeCgroup creates a child cgroup of this process's own for the
// command; remove takes it away once the command has exited.
func makeCgroup() (dir string, remove func(), err error) {
	mnt, err := cgroup2Mount()
	if err != nil {
		return "", nil, err
	}
	own, err := ownCgroup2()
	if err != nil {
		return "", nil, err
	}
	dir = filepath.Join(mnt, own, fmt.Sprintf("kfloor-%d-%d", os.Getpid(), cgroups.Add(1)))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", nil, fmt.Errorf("make a cgroup: %w", err)
	}
	return dir, func() { removeCgroup(dir) }, nil
}

// cgroups numbers this process's cgroups.
var cgroups atomic.Int64

// removeCgroup removes dir, retrying for a while on EBUSY: a command
// that was just reaped can still count in its cgroup until the kernel has
// let go of its tasks.
func removeCgroup(dir string) {
	for i := 0; i < 100; i++ {
		if err := os.Remove(dir); !errors.Is(err, unix.EBUSY) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}
