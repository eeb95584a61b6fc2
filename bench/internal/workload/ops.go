package main

import (
	"bufio"
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// An op is one timed operation; its maker sets up what it needs (peers,
// sockets) and returns how to tear that down.
type op func() error

type maker func() (op, func(), error)

// ops are the operations of the benchmark list.
var ops = map[string]maker{
	// (a) a syscall the filter never hands to user space.
	"getppid": func() (op, func(), error) {
		return func() error {
			syscall.RawSyscall(unix.SYS_GETPPID, 0, 0, 0)
			return nil
		}, func() {}, nil
	},
	// (b) socket + connect + accept + close (with a reset) to a loopback
	// TCP listener.
	"tcpconnect": makeTCPConnect,
	// (c) sendto on an unconnected UDP socket, naming a loopback peer.
	"udpsendto": makeUDPSendTo,
	// (d) send (sendto with a NULL address) on a connected UDP socket.
	"udpsend": makeUDPSend,
	// (e) ordinary setsockopt calls (TCP_NODELAY, SO_REUSEADDR, IP_TOS):
	// the filter compares level and optname and never hands them up.
	"setsockopt": makeSetsockopt,
	// (f) quic-go's send: sendmsg on an unconnected UDP socket with a
	// UDP_SEGMENT (GSO) and an IP_TOS control message (gso.go).
	"udpgso": makeUDPGSO,
}

// makeSetsockopt sets three ordinary options on one TCP socket per op.
func makeSetsockopt() (op, func(), error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, os.NewSyscallError("socket", err)
	}
	return func() error {
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1); err != nil {
			return os.NewSyscallError("setsockopt(TCP_NODELAY)", err)
		}
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
			return os.NewSyscallError("setsockopt(SO_REUSEADDR)", err)
		}
		return os.NewSyscallError("setsockopt(IP_TOS)", unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_TOS, 0x10))
	}, func() { unix.Close(fd) }, nil
}

func opNames() []string {
	names := make([]string, 0, len(ops))
	for n := range ops {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

var loopback = [4]byte{127, 0, 0, 1}

// makeTCPConnect connects to a loopback listener and accepts the
// connection on the same thread right after: the kernel completes the
// handshake into the backlog, so no goroutine has to be woken on another
// CPU (that wake-up made the bare figure swing by a factor of 3 on a small
// machine). The client closes first, so its port goes to TIME_WAIT; on
// loopback the kernel reuses those (net.ipv4.tcp_tw_reuse defaults to 2,
// loopback only).
func makeTCPConnect() (op, func(), error) {
	ln, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, os.NewSyscallError("socket", err)
	}
	if err := unix.Bind(ln, &unix.SockaddrInet4{Addr: loopback}); err != nil {
		unix.Close(ln)
		return nil, nil, os.NewSyscallError("bind", err)
	}
	if err := unix.Listen(ln, 128); err != nil {
		unix.Close(ln)
		return nil, nil, os.NewSyscallError("listen", err)
	}
	sa, err := unix.Getsockname(ln)
	if err != nil {
		unix.Close(ln)
		return nil, nil, os.NewSyscallError("getsockname", err)
	}
	return func() error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return os.NewSyscallError("socket", err)
		}
		if err = unix.Connect(fd, sa); err != nil {
			unix.Close(fd)
			return os.NewSyscallError("connect", err)
		}
		nfd, _, err := unix.Accept4(ln, unix.SOCK_CLOEXEC)
		if err != nil {
			unix.Close(fd)
			return os.NewSyscallError("accept4", err)
		}
		// Closed with a reset, not a FIN: no TIME_WAIT left behind. A
		// run of 100 000 connects would otherwise hold every ephemeral
		// port for a minute, and the kernel's search for a free one,
		// not the connect, would be what is timed (64 µs against 13).
		unix.SetsockoptLinger(fd, unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1, Linger: 0})
		unix.Close(fd)
		return unix.Close(nfd)
	}, func() { unix.Close(ln) }, nil
}

// udpPeer binds a loopback UDP socket that is never read: once its receive
// buffer is full every datagram is dropped, silently and at the same cost.
func udpPeer() (int, *unix.SockaddrInet4, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, nil, os.NewSyscallError("socket", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: loopback}); err != nil {
		unix.Close(fd)
		return -1, nil, os.NewSyscallError("bind", err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		unix.Close(fd)
		return -1, nil, os.NewSyscallError("getsockname", err)
	}
	in4, ok := sa.(*unix.SockaddrInet4)
	if !ok {
		unix.Close(fd)
		return -1, nil, errors.New("udp peer: not an IPv4 address")
	}
	return fd, in4, nil
}

func udpSender(peer *unix.SockaddrInet4, connect bool) (int, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, os.NewSyscallError("socket", err)
	}
	if connect {
		if err := unix.Connect(fd, peer); err != nil {
			unix.Close(fd)
			return -1, os.NewSyscallError("connect", err)
		}
	}
	return fd, nil
}

var payload = make([]byte, 64)

func makeUDPSendTo() (op, func(), error) { return makeUDP(false) }
func makeUDPSend() (op, func(), error)   { return makeUDP(true) }

func makeUDP(connected bool) (op, func(), error) {
	fd, peer, cleanup, err := udpPair(connected)
	if err != nil {
		return nil, nil, err
	}
	var to unix.Sockaddr = peer
	if connected {
		to = nil // sendto(fd, buf, len, 0, NULL, 0): send(2)
	}
	return func() error {
		return os.NewSyscallError("sendto", unix.Sendto(fd, payload, 0, to))
	}, cleanup, nil
}

// udpPair makes a peer and a sender socket (connected to it, or not) and
// returns the sender, the peer's address and how to close both.
func udpPair(connected bool) (int, *unix.SockaddrInet4, func(), error) {
	pfd, peer, err := udpPeer()
	if err != nil {
		return -1, nil, nil, err
	}
	fd, err := udpSender(peer, connected)
	if err != nil {
		unix.Close(pfd)
		return -1, nil, nil, err
	}
	return fd, peer, func() { unix.Close(fd); unix.Close(pfd) }, nil
}

// hwm reads VmHWM (peak resident set, KiB) from a /proc status file; 0 if
// it cannot.
func hwm(path string) int {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kib, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return kib
		}
	}
	return 0
}
