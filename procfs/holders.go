package procfs

import (
	"os"
	"strconv"
	"strings"
)

// Who holds a socket. Under --sealed a unix or loopback peer must belong
// to the confined tree: the supervisor learns the receiving socket's
// inode (sock_diag) and asks which process has it open.

// SocketInodes adds to held the inode of every socket open in the
// descriptor tables of pids, each with the first pid that holds it. A
// process that is gone, or whose table cannot be read, adds nothing.
func SocketInodes(pids []int, held map[uint64]int) {
	for _, pid := range pids {
		dir := "/proc/" + strconv.Itoa(pid) + "/fd/"
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range ents {
			link, err := os.Readlink(dir + e.Name())
			if err != nil {
				continue
			}
			if ino, ok := socketLinkInode(link); ok {
				if _, seen := held[ino]; !seen {
					held[ino] = pid
				}
			}
		}
	}
}

// HoldsSocket tells whether process pid has the socket of inode ino open.
func HoldsSocket(pid int, ino uint64) bool {
	held := map[uint64]int{}
	SocketInodes([]int{pid}, held)
	_, ok := held[ino]
	return ok
}

// socketLinkInode reads "socket:[1234]", what /proc/PID/fd/N says of a
// socket.
func socketLinkInode(link string) (uint64, bool) {
	s, ok := strings.CutPrefix(link, "socket:[")
	if !ok {
		return 0, false
	}
	s, ok = strings.CutSuffix(s, "]")
	if !ok {
		return 0, false
	}
	ino, err := strconv.ParseUint(s, 10, 64)
	return ino, err == nil
}

// SocketHolder finds a process that has the socket of inode ino open,
// looking at every process (slow: for naming an outside peer, once), or
// returns 0.
func SocketHolder(ino uint64) int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		held := map[uint64]int{}
		SocketInodes([]int{pid}, held)
		if _, ok := held[ino]; ok {
			return pid
		}
	}
	return 0
}

// Comm is the command name of process pid (/proc/PID/comm), or "".
func Comm(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(string(b), "\n")
}
