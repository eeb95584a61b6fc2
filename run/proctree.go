package run

import (
	"os"
	"strconv"
	"syscall"

	"github.com/nettrap/nettrap/procfs"
)

// signalTree sends sig to pid and to all its descendants, found through
// /proc. Descendants first, so that a parent that reacts to the signal
// does not see its children's status before they got it too.
func signalTree(pid int, sig syscall.Signal) {
	for _, d := range descendants(pid) {
		syscall.Kill(d, sig)
	}
	syscall.Kill(pid, sig)
}

// descendants lists the processes below pid, deepest last.
func descendants(pid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if pp := procfs.ParentPID(p); pp > 0 {
			children[pp] = append(children[pp], p)
		}
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}
