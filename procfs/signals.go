package procfs

import (
	"os"
	"strconv"
	"strings"
)

// Signals is a thread's signal state from /proc/TID/status: its thread
// group, and the masks SigPnd (sent to the thread), ShdPnd (sent to the
// process) and SigBlk (blocked), bit n-1 for signal n.
type Signals struct {
	Tgid                     int
	Private, Shared, Blocked uint64
}

// ThreadSignals reads thread tid's signal state.
func ThreadSignals(tid int) (Signals, bool) {
	return readSignals(TaskPath(tid, "status"))
}

// Threads lists the thread ids of process tgid.
func Threads(tgid int) ([]int, error) {
	return numberedEntries(TaskPath(tgid, "task"))
}

// Running tells whether process p still runs: its /proc entry is there
// and it is not a zombie.
func Running(p int) bool {
	f, err := statFields(p)
	return err == nil && len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

// Stopped tells whether process p is in a group stop (state T: a stop
// signal, not a tracer's stop).
func Stopped(p int) bool {
	f, err := statFields(p)
	return err == nil && len(f) > 0 && f[0] == "T"
}

func readSignals(path string) (Signals, bool) {
	var st Signals
	b, err := os.ReadFile(path)
	if err != nil {
		return st, false
	}
	seen := 0
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		var dst *uint64
		switch k {
		case "Tgid":
			if st.Tgid, err = strconv.Atoi(v); err != nil {
				return st, false
			}
			seen++
			continue
		case "SigPnd":
			dst = &st.Private
		case "ShdPnd":
			dst = &st.Shared
		case "SigBlk":
			dst = &st.Blocked
		default:
			continue
		}
		if *dst, err = strconv.ParseUint(v, 16, 64); err != nil {
			return st, false
		}
		seen++
	}
	return st, seen == 4
}
