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

// count is the victim of bench/syscount.sh (`workload count OP N DIR`):
// it makes one trapped operation N times, between two handshakes on
// FIFOs, so that the script can attach strace to the supervisor once the
// victim has started and warmed up, and detach it before the victim
// exits. What strace counts in between is the supervisor's work for N
// calls and nothing else.
//
// DIR holds two FIFOs the script made and holds open: the victim writes
// "ready" to DIR/out after its set-up and warm-up, waits for a line on
// DIR/in, makes its N calls, writes "done" to DIR/out, waits for another
// line on DIR/in and exits. The FIFOs' reads and writes are not trapped:
// the supervisor sees none of them.
//
// The ops, one trapped call each: connect (tcpconnect: nettrap emulates
// the connect), udpsendto (nettrap emulates it), and denied: socket +
// connect to 203.0.113.7:443 (TEST-NET-3, never routed) + close; the
// connect must fail (nettrap denies it with EPERM; run it where there is
// no route out anyway).
func count(args []string) error {
	if len(args) != 3 {
		return errors.New("usage: workload count connect|udpsendto|denied N DIR")
	}
	n, err := strconv.Atoi(args[1])
	if err != nil || n < 0 {
		return fmt.Errorf("bad N %q", args[1])
	}
	mk, ok := countOps[args[0]]
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
	if err := repeat(op, countWarmup, args[0]+" (warm-up)"); err != nil {
		return err
	}
	if err := handshake(out, lines, "ready"); err != nil {
		return err
	}
	if err := repeat(op, n, args[0]); err != nil {
		return err
	}
	return handshake(out, lines, "done")
}

// countWarmup calls are made before "ready": the code paths of the
// victim and of the supervisor paged in, its pools and caches filled.
const countWarmup = 200

// countOps are the ops of count.
var countOps = map[string]maker{
	"connect":   makeTCPConnect,
	"udpsendto": makeUDPSendTo,
	"denied":    makeDenied,
}

func repeat(op op, n int, what string) error {
	for range n {
		if err := op(); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
	}
	return nil
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
