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

// TestConnectedRecords: a connect that finds its socket connected is a
// restart only when another connect of nettrap's to the same address is
// on record; the caller's own record never counts (a program that
// connects a connected socket again gets EISCONN), and the records stay
// bounded.
func TestConnectedRecords(t *testing.T) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	a, b := []byte("address a"), []byte("address b")
	var k connected
	own := k.remember(fd, a)
	if k.madeBefore(fd, a, own) {
		t.Error("the connect's own record counted as an earlier one")
	}
	first := k.remember(fd, a)
	second := k.remember(fd, a)
	if !k.madeBefore(fd, a, second) {
		t.Error("an earlier connect to the same address not found")
	}
	third := k.remember(fd, a)
	if !k.madeBefore(fd, a, third) {
		t.Error("the earlier connect was forgotten after one restart: a second restart would say EISCONN")
	}
	if k.madeBefore(fd, b, k.remember(fd, b)) {
		t.Error("a connect to another address counted")
	}
	k.forget(first)
	if k.madeBefore(fd, a, k.remember(fd, a)) {
		t.Error("a forgotten record counted")
	}
	for range 2 * maxConnected {
		k.remember(fd, a)
	}
	if len(k.entries) > maxConnected {
		t.Errorf("%d records, want at most %d", len(k.entries), maxConnected)
	}
}
