package main

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// The calls issue 19 moved from CONTINUE to the supervisor: a unix
// connect and a unix datagram send with an address (the descriptor
// could be swapped under the kernel's second look), and a checked
// setsockopt (its value could be flipped).
func init() {
	ops["unixconnect"] = makeUnixConnect
	ops["unixsendto"] = makeUnixSendTo
	ops["pinopt"] = makePinOpt
}

// makeUnixConnect connects to a unix stream listener at a path and
// accepts on the same thread (as tcpconnect does).
func makeUnixConnect() (op, func(), error) {
	dir, err := os.MkdirTemp("", "nettrap-bench-unix-")
	if err != nil {
		return nil, nil, err
	}
	sa := &unix.SockaddrUnix{Name: filepath.Join(dir, "s")}
	ln, err := unixSocket(unix.SOCK_STREAM, sa)
	if err == nil {
		err = os.NewSyscallError("listen", unix.Listen(ln, 128))
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	return func() error {
			fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				return os.NewSyscallError("socket", err)
			}
			err = unix.Connect(fd, sa)
			unix.Close(fd)
			if err != nil {
				return os.NewSyscallError("connect", err)
			}
			nfd, _, err := unix.Accept4(ln, unix.SOCK_CLOEXEC)
			if err != nil {
				return os.NewSyscallError("accept4", err)
			}
			return unix.Close(nfd)
		}, func() {
			unix.Close(ln)
			os.RemoveAll(dir)
		}, nil
}

// makeUnixSendTo sends a datagram to a unix datagram socket at a path
// and reads it back on the same thread (a unix datagram queue that is
// never read fills and blocks).
func makeUnixSendTo() (op, func(), error) {
	dir, err := os.MkdirTemp("", "nettrap-bench-unix-")
	if err != nil {
		return nil, nil, err
	}
	sa := &unix.SockaddrUnix{Name: filepath.Join(dir, "d")}
	peer, err := unixSocket(unix.SOCK_DGRAM, sa)
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		unix.Close(peer)
		os.RemoveAll(dir)
		return nil, nil, os.NewSyscallError("socket", err)
	}
	buf := make([]byte, len(payload))
	return func() error {
			if err := unix.Sendto(fd, payload, 0, sa); err != nil {
				return os.NewSyscallError("sendto", err)
			}
			n, _, err := unix.Recvfrom(peer, buf, 0)
			if err != nil {
				return os.NewSyscallError("recvfrom", err)
			}
			if n != len(payload) {
				return fmt.Errorf("unixsendto: read %d bytes, want %d", n, len(payload))
			}
			return nil
		}, func() {
			unix.Close(fd)
			unix.Close(peer)
			os.RemoveAll(dir)
		}, nil
}

// unixSocket makes a unix socket of typ bound to sa.
func unixSocket(typ int, sa *unix.SockaddrUnix) (int, error) {
	fd, err := unix.Socket(unix.AF_UNIX, typ|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, os.NewSyscallError("socket", err)
	}
	if err := unix.Bind(fd, sa); err != nil {
		unix.Close(fd)
		return -1, os.NewSyscallError("bind", err)
	}
	return fd, nil
}

// makePinOpt pins a UDP socket to lo with IP_UNICAST_IF: an option the
// filter hands up, allowed (lo), set by nettrap with the checked value.
func makePinOpt() (op, func(), error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, os.NewSyscallError("socket", err)
	}
	lo := int(htonl(1))
	return func() error {
		return os.NewSyscallError("setsockopt(IP_UNICAST_IF)", unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_UNICAST_IF, lo))
	}, func() { unix.Close(fd) }, nil
}

// htonl is v in network byte order, as an int option takes it.
func htonl(v uint32) uint32 {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], v)
	return binary.NativeEndian.Uint32(b[:])
}
