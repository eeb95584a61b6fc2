package emulate

import (
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// TestHandable: only the sockets a program connects to a service with
// are made and handed in; raw, ping and packet sockets, and other
// families, never (nettrap is root where it makes the namespace).
func TestHandable(t *testing.T) {
	for _, c := range []struct {
		domain, typ, proto int
		want               bool
	}{
		{unix.AF_INET, unix.SOCK_STREAM, 0, true},
		{unix.AF_INET6, unix.SOCK_STREAM, unix.IPPROTO_TCP, true},
		{unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_MPTCP, true},
		{unix.AF_INET6, unix.SOCK_DGRAM, unix.IPPROTO_UDP, true},
		{unix.AF_UNIX, unix.SOCK_STREAM, 0, true},
		{unix.AF_UNIX, unix.SOCK_SEQPACKET, 0, true},
		{unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_RAW, false},
		{unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_ICMP, false},
		{unix.AF_INET, unix.SOCK_DGRAM, unix.IPPROTO_ICMP, false}, // ping
		{unix.AF_INET6, unix.SOCK_DGRAM, unix.IPPROTO_ICMPV6, false},
		{unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_SCTP, false},
		{unix.AF_INET, unix.SOCK_SEQPACKET, unix.IPPROTO_SCTP, false},
		{unix.AF_INET, unix.SOCK_DGRAM, unix.IPPROTO_UDPLITE, false},
		{unix.AF_PACKET, unix.SOCK_DGRAM, 0, false},
		{unix.AF_NETLINK, unix.SOCK_DGRAM, 0, false},
		{unix.AF_UNIX, unix.SOCK_RAW, 0, false},
	} {
		if got := handable(c.domain, c.typ, c.proto); got != c.want {
			t.Errorf("handable(%d, %d, %d) = %v, want %v", c.domain, c.typ, c.proto, got, c.want)
		}
	}
}

// TestCloseOnExec: the flag of the caller's descriptor is read from its
// fdinfo (a borrowed copy has its own), and O_CLOEXEC is assumed where
// it cannot be.
func TestCloseOnExec(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	with, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(with)
	without, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(without)
	call := func(fd int) *Call {
		c := &Call{}
		c.TID = unix.Gettid()
		c.Args[0] = uint64(fd)
		return c
	}
	if got := closeOnExec(call(with)); got != unix.O_CLOEXEC {
		t.Errorf("a close-on-exec socket: %#o, want O_CLOEXEC", got)
	}
	if got := closeOnExec(call(without)); got != 0 {
		t.Errorf("a socket without close-on-exec: %#o, want 0", got)
	}
	if got := closeOnExec(call(1 << 20)); got != unix.O_CLOEXEC {
		t.Errorf("no such descriptor: %#o, want O_CLOEXEC", got)
	}
}
