package procfs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// Root is where the kernel shows its process table.
const Root = "/proc"

// TaskPath is the path of name in the /proc directory of task (or
// process) tid: TaskPath(42, "mem") is "/proc/42/mem".
func TaskPath(tid int, name string) string {
	return Root + "/" + strconv.Itoa(tid) + "/" + name
}

// SelfPath is the path of name in this process's /proc directory.
func SelfPath(name string) string { return Root + "/self/" + name }

// ThreadSelfPath is the path of name in the calling thread's /proc
// directory: what differs between threads (a namespace after setns)
// must be read there, from a locked thread.
func ThreadSelfPath(name string) string { return Root + "/thread-self/" + name }

// Process is what /proc tells of the process a task belongs to.
type Process struct {
	PID  int // the thread group id
	Exe  string
	Argv []string
}

// ProcessOf reads the process task tid belongs to: its thread group
// from status, its executable and its command line. The error says the
// task is gone; Exe and Argv may be missing for a task of another user
// or a kernel thread.
func ProcessOf(tid int) (Process, error) {
	p := Process{PID: tid}
	tgid, err := ThreadGroup(tid)
	if err != nil {
		return p, err
	}
	p.PID = tgid
	p.Exe, _ = os.Readlink(TaskPath(tid, "exe"))
	if cmdline, err := os.ReadFile(TaskPath(tid, "cmdline")); err == nil && len(cmdline) > 0 {
		for _, a := range bytes.Split(bytes.TrimRight(cmdline, "\x00"), []byte{0}) {
			p.Argv = append(p.Argv, string(a))
		}
	}
	return p, nil
}

// ThreadGroup reads the thread group id of task tid (the "Tgid:" line of
// its status): the pid of the process the thread belongs to.
func ThreadGroup(tid int) (int, error) {
	v, err := StatusField(TaskPath(tid, "status"), "Tgid")
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(v)
}

// StatusField reads the value of one "Key:" line of a status file
// (/proc/N/status, SelfPath("status")), trimmed.
func StatusField(path, key string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, key+":"); ok {
			return strings.TrimSpace(v), nil
		}
	}
	return "", errors.New("procfs: no " + key + " in " + path)
}

// HasCapability tells whether capability c is in the set field
// ("CapEff", "CapPrm", …) of a status file (SelfPath("status"),
// TaskPath(tid, "status")).
func HasCapability(status, field string, c int) (bool, error) {
	v, err := StatusField(status, field)
	if err != nil {
		return false, err
	}
	caps, err := strconv.ParseUint(v, 16, 64)
	if err != nil {
		return false, fmt.Errorf("procfs: %s in %s: %w", field, status, err)
	}
	return caps&(1<<c) != 0, nil
}

// PathExists tells whether path exists as task tid sees it: in its own
// mount namespace and root, relative to its working directory. When in
// doubt (the task is gone) it says yes: callers use it to let a call
// pass that could reach nothing.
func PathExists(tid int, path string) bool {
	var p string
	if strings.HasPrefix(path, "/") {
		p = TaskPath(tid, "root") + path
	} else {
		p = TaskPath(tid, "cwd/") + path
	}
	if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
		return true
	}
	_, err := os.Stat(TaskPath(tid, "root"))
	return errors.Is(err, os.ErrNotExist) // the task is gone: in doubt
}

// OpenFDs lists this process's open descriptors, in increasing order
// (the directory's own descriptor included, while it was open).
func OpenFDs() ([]int, error) {
	fds, err := numberedEntries(SelfPath("fd"))
	if err != nil {
		return nil, err
	}
	slices.Sort(fds) // ReadDir sorts by name: "10" before "3"
	return fds, nil
}

// numberedEntries lists the entries of dir whose names are numbers (fds,
// task ids), in the directory's order.
func numberedEntries(dir string) ([]int, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	ns := make([]int, 0, len(ents))
	for _, e := range ents {
		if n, err := strconv.Atoi(e.Name()); err == nil {
			ns = append(ns, n)
		}
	}
	return ns, nil
}
