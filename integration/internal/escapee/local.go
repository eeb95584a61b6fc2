package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Local peers (the --sealed peer checks): a unix daemon or a loopback
// service may reach the network for the caller.

// unixAddr is a unix address: "@name" is abstract.
func unixAddr(name string) *unix.SockaddrUnix {
	if rest, ok := strings.CutPrefix(name, "@"); ok {
		return &unix.SockaddrUnix{Name: "@" + rest}
	}
	return &unix.SockaddrUnix{Name: name}
}

// unixSend connects a unix socket of type typ ("stream" or "dgram") to
// name and sends msg (a stream writes after the connect; a datagram is
// sent with sendto, unconnected).
func unixSend(typ, name, msg string) error {
	switch typ {
	case "stream":
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return sysErr("socket", err)
		}
		defer unix.Close(fd)
		if err := unix.Connect(fd, unixAddr(name)); err != nil {
			return sysErr("connect", err)
		}
		_, err = unix.Write(fd, []byte(msg))
		return sysErr("write", err)
	case "dgram":
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return sysErr("socket", err)
		}
		defer unix.Close(fd)
		return sysErr("sendto", unix.Sendto(fd, []byte(msg), 0, unixAddr(name)))
	}
	return fmt.Errorf("unknown unix type %q", typ)
}

// tcpSend connects to dst and writes msg.
func tcpSend(dst, msg string) error {
	fd, sa, _, _, err := pinnedSocket(dst, unix.SOCK_STREAM, nil)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Connect(fd, sa); err != nil {
		return sysErr("connect", err)
	}
	_, err = unix.Write(fd, []byte(msg))
	return sysErr("write", err)
}

// ownServers makes a unix stream listener on a path, an abstract unix
// datagram receiver, and TCP and UDP sockets on 127.0.0.1, and talks to
// each from another socket of its own: all must work under --sealed.
func ownServers() error {
	dir, err := os.MkdirTemp("", "escapee-own-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "s.sock")
	ln, err := listenUnix(unix.SOCK_STREAM, path)
	if err != nil {
		return err
	}
	defer unix.Close(ln)
	if err := unixSend("stream", path, "own stream"); err != nil {
		return fmt.Errorf("own stream listener: %w", err)
	}
	abstract := "@escapee-own-" + strconv.Itoa(os.Getpid())
	rcv, err := listenUnix(unix.SOCK_DGRAM, abstract)
	if err != nil {
		return err
	}
	defer unix.Close(rcv)
	if err := unixSend("dgram", abstract, "own datagram"); err != nil {
		return fmt.Errorf("own datagram receiver: %w", err)
	}
	buf := make([]byte, 64)
	if n, _, err := unix.Recvfrom(rcv, buf, unix.MSG_DONTWAIT); err != nil || !bytes.Equal(buf[:n], []byte("own datagram")) {
		return fmt.Errorf("own datagram not received: %q, %v", buf[:n], err)
	}
	return ownInet()
}

// ownInet talks to a TCP listener and a UDP socket of its own on
// 127.0.0.1.
func ownInet() error {
	tl, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return sysErr("socket", err)
	}
	defer unix.Close(tl)
	lo := &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}
	if err := unix.Bind(tl, lo); err != nil {
		return sysErr("bind", err)
	}
	if err := unix.Listen(tl, 8); err != nil {
		return sysErr("listen", err)
	}
	sa, _ := unix.Getsockname(tl)
	if err := tcpSend("127.0.0.1:"+strconv.Itoa(sa.(*unix.SockaddrInet4).Port), "own tcp"); err != nil {
		return fmt.Errorf("own tcp listener: %w", err)
	}
	ur, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return sysErr("socket", err)
	}
	defer unix.Close(ur)
	if err := unix.Bind(ur, lo); err != nil {
		return sysErr("bind", err)
	}
	sa, _ = unix.Getsockname(ur)
	us, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return sysErr("socket", err)
	}
	defer unix.Close(us)
	if err := unix.Sendto(us, []byte("own udp"), 0, sa); err != nil {
		return fmt.Errorf("own udp socket: %w", sysErr("sendto", err))
	}
	return nil
}

func listenUnix(typ int, name string) (int, error) {
	fd, err := unix.Socket(unix.AF_UNIX, typ|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, sysErr("socket", err)
	}
	if err := unix.Bind(fd, unixAddr(name)); err != nil {
		unix.Close(fd)
		return -1, sysErr("bind", err)
	}
	if typ == unix.SOCK_STREAM {
		if err := unix.Listen(fd, 8); err != nil {
			unix.Close(fd)
			return -1, sysErr("listen", err)
		}
	}
	return fd, nil
}

// ownServersClosing listens n times on 127.0.0.1, on a unix path and
// on an abstract unix name, and dials each listener while another
// goroutine closes it: a test server shutting down as a client connects.
// A dial may be refused; what matters is nettrap's verdict (the listener
// was the tree's, closing, never one outside).
func ownServersClosing(n string) error {
	count, err := strconv.Atoi(n)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "escapee-closing-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	for i := range count {
		for _, a := range [][2]string{
			{"tcp", "127.0.0.1:0"},
			{"unix", filepath.Join(dir, strconv.Itoa(i))},
			{"unix", "@escapee-closing-" + strconv.Itoa(os.Getpid()) + "-" + strconv.Itoa(i)},
		} {
			if err := dialClosing(a[0], a[1]); err != nil {
				return err
			}
		}
	}
	return nil
}

// dialClosing listens at addr and dials it while closing it.
func dialClosing(network, addr string) error {
	ln, err := net.Listen(network, addr)
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		if c, err := net.Dial(network, ln.Addr().String()); err == nil {
			c.Close()
		}
	})
	wg.Go(func() { ln.Close() })
	wg.Wait()
	return nil
}

// goDial dials NETWORK ADDR with Go's net package (a non-blocking
// connect, waited for in the poller) and writes MSG: the path of a Go
// test's own dials.
func goDial(network, addr, msg string) error {
	c, err := net.DialTimeout(network, addr, 10*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Write([]byte(msg))
	return err
}
