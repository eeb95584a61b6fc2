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

// Cgroup2Mounts are the mount points of every cgroup2 file system the
// calling thread sees (/proc/thread-self/mountinfo), unescaped.
func Cgroup2Mounts() ([]string, error) {
	mi, err := os.ReadFile("/proc/thread-self/mountinfo")
	if err != nil {
		return nil, err
	}
	return cgroup2Mounts(string(mi)), nil
}

func cgroup2Mounts(mountinfo string) []string {
	var out []string
	for _, l := range strings.Split(mountinfo, "\n") {
		pre, post, ok := strings.Cut(l, " - ")
		fields := strings.Fields(pre)
		if ok && len(fields) >= 5 && strings.HasPrefix(post, "cgroup2 ") {
			out = append(out, unescapeMount(fields[4]))
		}
	}
	return out
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space, \011,
// \012, \134).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) && isOctal(s[i+1:i+4]) {
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(s string) bool {
	if len(s) != 3 {
		return false
	}
	for i := 0; i < 3; i++ {
		if s[i] < '0' || s[i] > '7' {
			return false
		}
	}
	return true
}
