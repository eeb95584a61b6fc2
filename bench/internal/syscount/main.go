// Command syscount is the victim of bench/syscount.sh: it makes one
// trapped operation N times, between two handshakes on FIFOs, so that the
// script can attach strace to the supervisor once the victim has started
// and warmed up, and detach it before the victim exits. What strace counts
// in between is the supervisor's work for N calls and nothing else.
//
//	syscount OP N DIR
//
// DIR holds two FIFOs the script made and holds open: the victim writes
// "ready" to DIR/out after its set-up and warm-up, waits for a line on
// DIR/in, makes its N calls, writes "done" to DIR/out, waits for another
// line on DIR/in and exits. The FIFOs' reads and writes are not trapped:
// the supervisor sees none of them.
//
// The ops, one trapped call each:
//
//	connect    socket + connect to a loopback TCP listener of its own +
//	           close + accept4 + close (nettrap emulates the connect)
//	udpsendto  sendto of 64 bytes on an unconnected UDP socket to a
//	           loopback peer of its own, never read (nettrap emulates it)
//	denied     socket + connect to 203.0.113.7:443 (TEST-NET-3, never
//	           routed) + close; the connect must fail (nettrap denies
//	           it with EPERM; run it where there is no route out anyway)
package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "syscount:", err)
		os.Exit(1)
	}
}

// warmup calls are made before "ready": the code paths of the victim and
// of the supervisor paged in, the supervisor's pools and caches filled.
const warmup = 200

func run(args []string) error {
	if len(args) != 3 {
		return errors.New("usage: syscount connect|udpsendto|denied N DIR")
	}
	n, err := strconv.Atoi(args[1])
	if err != nil || n < 0 {
		return fmt.Errorf("bad N %q", args[1])
	}
	mk, ok := ops[args[0]]
	if !ok {
		return fmt.Errorf("unknown op %q", args[0])
	}
	op, cleanup, err := mk()
	if err != nil {
		return fmt.Errorf("set up %s: %w", args[0], err)
	}
	defer cleanup()
	out, err := os.OpenFile(filepath.Join(args[2], "out"), os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer out.Close()
	in, err := os.Open(filepath.Join(args[2], "in"))
	if err != nil {
		return err
	}
	defer in.Close()
	lines := bufio.NewScanner(in)
	for i := 0; i < warmup; i++ {
		if err := op(); err != nil {
			return fmt.Errorf("%s (warm-up): %w", args[0], err)
		}
	}
	if err := handshake(out, lines, "ready"); err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		if err := op(); err != nil {
			return fmt.Errorf("%s: %w", args[0], err)
		}
	}
	return handshake(out, lines, "done")
}

// handshake says word on out and waits for a line.
func handshake(out *os.File, lines *bufio.Scanner, word string) error {
	if _, err := fmt.Fprintln(out, word); err != nil {
		return err
	}
	if !lines.Scan() {
		return fmt.Errorf("after %s: no go-ahead (%v)", word, lines.Err())
	}
	return nil
}

type op func() error

var ops = map[string]func() (op, func(), error){
	"connect":   makeConnect,
	"udpsendto": makeUDPSendTo,
	"denied":    makeDenied,
}

var loopback = [4]byte{127, 0, 0, 1}

// makeConnect connects to a listener of its own and accepts on the same
// thread (as bench's tcpconnect).
func makeConnect() (op, func(), error) {
	ln, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, os.NewSyscallError("socket", err)
	}
	closeLn := func() { unix.Close(ln) }
	if err := unix.Bind(ln, &unix.SockaddrInet4{Addr: loopback}); err != nil {
		closeLn()
		return nil, nil, os.NewSyscallError("bind", err)
	}
	if err := unix.Listen(ln, 128); err != nil {
		closeLn()
		return nil, nil, os.NewSyscallError("listen", err)
	}
	sa, err := unix.Getsockname(ln)
	if err != nil {
		closeLn()
		return nil, nil, os.NewSyscallError("getsockname", err)
	}
	return func() error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
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
	}, closeLn, nil
}

// makeUDPSendTo sends to a bound loopback UDP socket that is never read:
// once its receive buffer is full each datagram is dropped, silently.
func makeUDPSendTo() (op, func(), error) {
	peer, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, os.NewSyscallError("socket", err)
	}
	if err := unix.Bind(peer, &unix.SockaddrInet4{Addr: loopback}); err != nil {
		unix.Close(peer)
		return nil, nil, os.NewSyscallError("bind", err)
	}
	sa, err := unix.Getsockname(peer)
	if err != nil {
		unix.Close(peer)
		return nil, nil, os.NewSyscallError("getsockname", err)
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		unix.Close(peer)
		return nil, nil, os.NewSyscallError("socket", err)
	}
	payload := make([]byte, 64)
	return func() error {
			return os.NewSyscallError("sendto", unix.Sendto(fd, payload, 0, sa))
		}, func() {
			unix.Close(fd)
			unix.Close(peer)
		}, nil
}

// deniedAddr is 203.0.113.7:443, TEST-NET-3 (RFC 5737): never routed.
var deniedAddr = &unix.SockaddrInet4{Addr: [4]byte{203, 0, 113, 7}, Port: 443}

// makeDenied connects to deniedAddr; the connect must fail (nettrap
// denies it; bare, in a namespace without a route out, ENETUNREACH).
func makeDenied() (op, func(), error) {
	return func() error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return os.NewSyscallError("socket", err)
		}
		err = unix.Connect(fd, deniedAddr)
		unix.Close(fd)
		if err == nil {
			return errors.New("connect to 203.0.113.7:443 succeeded: not denied")
		}
		return nil
	}, func() {}, nil
}
