package procfs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
)

// OwnCgroup2 is the directory of this process's cgroup v2: where the
// cgroup v2 hierarchy is mounted (also in the hybrid layout,
// /sys/fs/cgroup/unified) joined with the path /proc/self/cgroup names.
func OwnCgroup2() (string, error) {
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	mnt, err := cgroup2Mount(string(mi))
	if err != nil {
		return "", err
	}
	cg, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	rel, err := cgroup2Path(string(cg))
	if err != nil {
		return "", err
	}
	return filepath.Join(mnt, rel), nil
}

// cgroup2Mount finds the mount point of the first cgroup2 file system in
// a mountinfo file's text.
func cgroup2Mount(mountinfo string) (string, error) {
	for _, l := range strings.Split(mountinfo, "\n") {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPER
		pre, post, ok := strings.Cut(l, " - ")
		fields := strings.Fields(pre)
		if ok && len(fields) >= 5 && strings.HasPrefix(post, "cgroup2 ") {
			return fields[4], nil
		}
	}
	return "", errors.New("no cgroup v2 hierarchy is mounted")
}

// cgroup2Path reads the cgroup v2 path ("0::/PATH") of a /proc/PID/cgroup
// file's text.
func cgroup2Path(cgroup string) (string, error) {
	for _, l := range strings.Split(cgroup, "\n") {
		if p, ok := strings.CutPrefix(l, "0::"); ok {
			return p, nil
		}
	}
	return "", errors.New("/proc/self/cgroup names no cgroup v2 path")
}
