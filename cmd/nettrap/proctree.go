package main

import (
	"os"
	"strconv"
	"strings"
	"syscall"
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
		if pp := parentPID(p); pp > 0 {
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

// parentPID reads the parent of p from /proc/p/stat; the command name in
// parentheses may hold spaces and parentheses, so parse after the last ')'.
func parentPID(p int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0
	}
	pp, _ := strconv.Atoi(f[1])
	return pp
}
