package procfs

import (
	"net"
	"os"
	"syscall"
	"testing"
)

func TestSocketLinkInode(t *testing.T) {
	for _, tc := range []struct {
		link string
		ino  uint64
		ok   bool
	}{
		{"socket:[1234]", 1234, true},
		{"socket:[]", 0, false},
		{"socket:[12", 0, false},
		{"pipe:[1234]", 0, false},
		{"/dev/null", 0, false},
		{"socket:[x1]", 0, false},
	} {
		ino, ok := socketLinkInode(tc.link)
		if ino != tc.ino || ok != tc.ok {
			t.Errorf("socketLinkInode(%q) = %d, %t; want %d, %t", tc.link, ino, ok, tc.ino, tc.ok)
		}
	}
}

// A socket of this process is found among its inodes, and by a scan of
// all processes; Comm names this process.
func TestSocketHolder(t *testing.T) {
	ln, err := net.Listen("unix", "@nettrap-procfs-holder-test")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	f, err := ln.(*net.UnixListener).File()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	held := map[uint64]int{}
	SocketInodes([]int{os.Getpid()}, held)
	if held[st.Ino] != os.Getpid() {
		t.Errorf("inode %d not held by %d: %v", st.Ino, os.Getpid(), held)
	}
	if !HoldsSocket(os.Getpid(), st.Ino) || HoldsSocket(os.Getpid(), st.Ino+1<<40) {
		t.Errorf("HoldsSocket(%d, %d) wrong", os.Getpid(), st.Ino)
	}
	if got := SocketHolder(st.Ino); got != os.Getpid() {
		t.Errorf("SocketHolder(%d) = %d, want %d", st.Ino, got, os.Getpid())
	}
	if Comm(os.Getpid()) == "" {
		t.Error("Comm of this process is empty")
	}
}
