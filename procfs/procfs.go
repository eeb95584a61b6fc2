package procfs

import (
	"errors"
	"os"
	"strconv"
	"strings"
)

// ParentPID reads the parent of p from /proc/p/stat (p may be a thread
// id); the command name in parentheses may hold spaces and parentheses,
// so parse after the last ')'. 0 when p is gone.
func ParentPID(p int) int {
	f, err := statFields(p)
	if err != nil || len(f) < 2 {
		return 0
	}
	pp, _ := strconv.Atoi(f[1])
	return pp
}

// statFields are the fields of /proc/p/stat after the command name, from
// field 3 (state) on. The name in parentheses may hold spaces and
// parentheses, so the fields start after the last ')'.
func statFields(p int) ([]string, error) {
	b, err := os.ReadFile(TaskPath(p, "stat"))
	if err != nil {
		return nil, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil, errors.New("procfs: malformed stat of pid " + strconv.Itoa(p))
	}
	return strings.Fields(s[i+1:]), nil
}

// maxDepth bounds a walk up the process tree (a loop cannot happen, but a
// pid reused while walking could make the walk long).
const maxDepth = 1024

// IsDescendant reports whether process (or thread) p descends from process
// ancestor: ancestor is p's parent, grandparent, and so on. A process is not
// its own descendant.
func IsDescendant(p, ancestor int) bool {
	if p <= 0 || ancestor <= 0 {
		return false
	}
	for i, cur := 0, ParentPID(p); i < maxDepth && cur > 0; i, cur = i+1, ParentPID(cur) {
		if cur == ancestor {
			return true
		}
	}
	return false
}

// OwnPIDNamespace names this process's pid namespace ("pid:[4026531836]"):
// pids written down by one process mean something to another only when
// they name the same one.
func OwnPIDNamespace() (string, error) {
	return os.Readlink(SelfPath("ns/pid"))
}

// SamePIDNamespace reports whether task tid sees the same pid numbers as
// this process. Pids a task passes in its syscalls are numbers of its own
// pid namespace; they can only be looked up here if it is ours.
func SamePIDNamespace(tid int) bool {
	self, err := os.Readlink(SelfPath("ns/pid"))
	if err != nil {
		return false
	}
	other, err := os.Readlink(TaskPath(tid, "ns/pid"))
	return err == nil && other == self
}

// SeccompFiltered reports whether this process runs under a seccomp
// filter (the "Seccomp:" line of /proc/self/status is 2, SECCOMP_MODE_FILTER).
func SeccompFiltered() bool {
	v, err := StatusField(SelfPath("status"), "Seccomp")
	return err == nil && v == "2"
}

// PidfdReaped is PidfdTarget's answer for a pidfd whose process has
// exited and been reaped: it will never name a process again.
const PidfdReaped = -1

// PidfdTarget returns the pid that descriptor fd of task tid refers to, if
// it is a pidfd (the "Pid:" line of its fdinfo, in this process's pid
// namespace; PidfdReaped for a reaped process's), or 0.
func PidfdTarget(tid, fd int) int {
	b, err := os.ReadFile(TaskPath(tid, "fdinfo/"+strconv.Itoa(fd)))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Pid:"); ok {
			pid, _ := strconv.Atoi(strings.TrimSpace(v))
			return pid
		}
	}
	return 0
}

// Exited reports whether process p has exited and not been reaped yet (a
// zombie): its /proc entry stays, without an executable.
func Exited(p int) bool {
	f, err := statFields(p)
	return err == nil && len(f) > 0 && (f[0] == "Z" || f[0] == "X")
}

// pfExiting is the kernel's PF_EXITING task flag: the task is exiting.
const pfExiting = 0x4

// Lives reports whether thread (or process) tid exists and is not
// exiting: not gone, not a zombie, and without PF_EXITING in its flags
// (field 9 of /proc/tid/stat), which a thread killed by its process's
// exit carries before it is gone.
func Lives(tid int) bool {
	f, err := statFields(tid)
	if err != nil || len(f) < 7 || f[0] == "Z" || f[0] == "X" {
		return false
	}
	flags, err := strconv.ParseUint(f[6], 10, 64)
	return err == nil && flags&pfExiting == 0
}

// StartTime is when process p started, in clock ticks after boot (field 22
// of /proc/p/stat). With the pid it names one process for good: a pid
// number that is reused gets a later start time. An exec keeps it.
func StartTime(p int) (uint64, error) {
	f, err := statFields(p)
	if err != nil {
		return 0, err
	}
	if len(f) < 22-2 {
		return 0, errors.New("procfs: short stat of pid " + strconv.Itoa(p))
	}
	return strconv.ParseUint(f[22-3], 10, 64)
}
