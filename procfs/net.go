package procfs

import (
	"bufio"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// NsID names a namespace: the device and inode of its nsfs file, which
// is what the kernel compares (ns_get_path).
type NsID struct{ Dev, Ino uint64 }

// Namespace reads which namespace the nsfs file at nsPath names:
// TaskPath(tid, "ns/net"), ThreadSelfPath("ns/net").
func Namespace(nsPath string) (NsID, error) {
	var st unix.Stat_t
	if err := unix.Stat(nsPath, &st); err != nil {
		return NsID{}, &os.PathError{Op: "stat", Path: nsPath, Err: err}
	}
	return NsID{Dev: st.Dev, Ino: st.Ino}, nil
}

// SocketInode is the inode of the socket at descriptor fd of task tid
// ("socket:[1234]" in /proc/TID/fd), or false when fd is not an open
// socket there.
func SocketInode(tid, fd int) (string, bool) {
	link, err := os.Readlink(TaskPath(tid, "fd/"+strconv.Itoa(fd)))
	if err != nil {
		return "", false
	}
	ino, ok := strings.CutPrefix(link, "socket:[")
	if !ok {
		return "", false
	}
	return strings.TrimSuffix(ino, "]"), true
}

// socketTables are the tables of /proc/TID/net that list sockets by
// inode, with the name of their kind and the inode's column (see
// proc_net_tcp(5) and net/unix/af_unix.c, net/packet/af_packet.c).
var socketTables = []struct {
	file, name string
	col        int
}{
	{"tcp", "tcp", 9}, {"tcp6", "tcp", 9}, {"udp", "udp", 9}, {"udp6", "udp", 9},
	{"raw", "raw", 9}, {"raw6", "raw", 9}, {"unix", "unix", 6}, {"packet", "packet", 8},
	{"icmp", "icmp", 9}, {"icmp6", "icmp", 9}, {"udplite", "udp", 9}, {"udplite6", "udp", 9},
}

// SocketProtoName is the kernel's name of the protocol of the socket at
// descriptor fd of task tid ("TCPv6", "UDP", "UNIX-STREAM"), read from
// the sockfs attribute system.sockprotoname through /proc/TID/fd; false
// when fd is not an open socket there. Unlike the /proc/TID/net tables it
// knows sockets that are not bound yet, and needs no pidfd_getfd.
func SocketProtoName(tid, fd int) (string, bool) {
	buf := make([]byte, 32)
	n, err := unix.Getxattr(TaskPath(tid, "fd/"+strconv.Itoa(fd)), "system.sockprotoname", buf)
	if err != nil || n <= 0 || n > len(buf) {
		return "", false
	}
	return strings.TrimRight(string(buf[:n]), "\x00"), true
}

// SocketKind names the socket at descriptor fd of task tid by the table
// of /proc/TID/net that lists it ("tcp", "udp", "raw", "unix", "packet",
// "icmp"), or "" when none does. The tables list the task's own network
// namespace only.
func SocketKind(tid, fd int) string {
	ino, ok := SocketInode(tid, fd)
	if !ok {
		return ""
	}
	for _, tb := range socketTables {
		if _, found := findInode(TaskPath(tid, "net/"+tb.file), ino, tb.col); found {
			return tb.name
		}
	}
	return ""
}

// NetlinkProtocol finds the netlink socket at descriptor fd of task tid
// in /proc/TID/net/netlink (columns: sk Eth Pid Groups Rmem Wmem Dump
// Locks Drops Inode) and returns its protocol; false when it is not a
// netlink socket of the task's namespace.
func NetlinkProtocol(tid, fd int) (int, bool) {
	ino, ok := SocketInode(tid, fd)
	if !ok {
		return 0, false
	}
	fields, found := findInode(TaskPath(tid, "net/netlink"), ino, 9)
	if !found {
		return 0, false
	}
	proto, err := strconv.Atoi(fields[1])
	return proto, err == nil
}

// findInode returns the fields of the line of table path whose column
// col is ino.
func findInode(path, ino string, col int) ([]string, bool) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fl := strings.Fields(sc.Text()); len(fl) > col && fl[col] == ino {
			return fl, true
		}
	}
	return nil, false
}
