package main

// The victims of the hold's tests (hold_test.go): each runs in a cgroup
// with the hold programs and a network namespace of its own, makes its
// calls and prints one line of outcome.

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// heldVictim runs op and prints its outcome on one line.
func heldVictim(op string) int {
	if err := loUp(flipDenied.Addr()); err != nil {
		fmt.Fprintln(os.Stderr, "victim:", err)
		return 1
	}
	switch {
	case op == opFlip:
		return flipVictim()
	case op == opSwap:
		return swapVictim()
	case strings.HasPrefix(op, opLoop):
		return loopVictim(strings.TrimPrefix(op, opLoop))
	case op == opMark || op == opMarkAfter:
		return markVictim(op == opMarkAfter)
	case op == opGo:
		return goroutineVictim()
	case op == opRedirect:
		return redirectVictim()
	case op == opUnix:
		return unixVictim()
	}
	var ticks int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the caller's other goroutines run while it is held
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
				ticks++
			}
		}
	}()
	typ, family := unix.SOCK_DGRAM, unix.AF_INET
	if strings.HasPrefix(op, opConn) {
		typ = unix.SOCK_STREAM
	}
	var sa unix.Sockaddr = &unix.SockaddrInet4{Port: int(heldDest.Port()), Addr: heldDest.Addr().As4()}
	if strings.HasSuffix(op, "6") {
		family = unix.AF_INET6
		sa = &unix.SockaddrInet6{Port: int(heldDest6.Port()), Addr: heldDest6.Addr().As16()}
	}
	fd, err := unix.Socket(family, typ, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, "victim:", err)
		return 1
	}
	start := time.Now()
	if typ == unix.SOCK_STREAM {
		err = unix.Connect(fd, sa)
	} else {
		err = unix.Sendto(fd, []byte("kfloor"), 0, sa)
	}
	took := time.Since(start)
	close(stop)
	wg.Wait()
	res := "ok"
	if err != nil {
		res = err.Error()
	}
	fmt.Printf("%s|%d|%d\n", res, took.Milliseconds(), ticks)
	return 0
}

// flipVictim sends flipSends datagrams from one socket through one
// address in memory that another goroutine keeps flipping between
// heldDest (the decider allows it: no route, ENETUNREACH) and flipDenied
// (denied: EPERM; a datagram that got through would arrive at its
// listener). It prints "eperm N unreach N ok N arrived N".
func flipVictim() int {
	l, err := netListenUDP(flipDenied)
	if err != nil {
		fmt.Fprintln(os.Stderr, "victim:", err)
		return 1
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, "victim:", err)
		return 1
	}
	rsa := newFlipAddr(heldDest)
	stop := toggle(func(even bool) {
		if even {
			rsa.set(flipDenied)
		} else {
			rsa.set(heldDest)
		}
	})
	counts := map[string]int{}
	for i := 0; i < flipSends; i++ {
		switch err := rsa.sendto(fd); err {
		case nil:
			counts["ok"]++
		case unix.EPERM:
			counts["eperm"]++
		case unix.ENETUNREACH:
			counts["unreach"]++
		default:
			counts[err.Error()]++
		}
	}
	stop()
	fmt.Printf("eperm %d unreach %d ok %d arrived %d\n", counts["eperm"], counts["unreach"], counts["ok"], l.drain(200*time.Millisecond))
	return 0
}

const swapSends = 2000

// swapVictim sends to flipDenied (a listener on its lo) through one
// descriptor number, first once from socket A alone, then swapSends
// times while another goroutine dup2s sockets B and A onto that number
// in turn. It prints "ok N eperm N fromA N fromB N": the sends' results
// and the datagrams that arrived from each socket's port.
func swapVictim() int {
	l, err := netListenUDP(flipDenied)
	if err != nil {
		fmt.Fprintln(os.Stderr, "victim:", err)
		return 1
	}
	a, portA, errA := boundUDP()
	b, portB, errB := boundUDP()
	n, errN := unix.Dup(a)
	if err := errors.Join(errA, errB, errN); err != nil {
		fmt.Fprintln(os.Stderr, "victim:", err)
		return 1
	}
	to := &unix.SockaddrInet4{Port: int(flipDenied.Port()), Addr: flipDenied.Addr().As4()}
	counts := map[string]int{}
	count := func(err error) {
		switch err {
		case nil:
			counts["ok"]++
		case unix.EPERM:
			counts["eperm"]++
		default:
			counts[err.Error()]++
		}
	}
	count(unix.Sendto(n, []byte("kfloor"), 0, to)) // A's, alone: the decider's first
	stop := toggle(func(even bool) {
		if even {
			unix.Dup2(b, n)
		} else {
			unix.Dup2(a, n)
		}
	})
	for i := 0; i < swapSends; i++ {
		count(unix.Sendto(n, []byte("kfloor"), 0, to))
	}
	stop()
	from := l.drainFrom(200 * time.Millisecond)
	fmt.Printf("ok %d eperm %d fromA %d fromB %d\n", counts["ok"], counts["eperm"], from[portA], from[portB])
	return 0
}

// toggle calls f(true), f(false), f(true)… on a goroutine of its own as
// fast as it can, until stop, which waits for it.
func toggle(f func(even bool)) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			f(i%2 == 0)
		}
	}()
	return func() { close(done); wg.Wait() }
}

// boundUDP is a UDP socket bound to a port of its own on 127.0.0.1.
func boundUDP() (fd, port int, err error) {
	fd, err = unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
	if err != nil {
		return -1, 0, err
	}
	if err = unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return -1, 0, err
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return -1, 0, err
	}
	return fd, sa.(*unix.SockaddrInet4).Port, nil
}

// loopVictim makes n (a decimal) sends to heldDest and prints the ns
// each took on average, after a warm-up of a tenth as many, and the
// errno of the last.
func loopVictim(n string) int {
	count, err := strconv.Atoi(n)
	if err != nil || count < 1 {
		fmt.Fprintln(os.Stderr, "victim: bad count", n)
		return 1
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, "victim:", err)
		return 1
	}
	sa := &unix.SockaddrInet4{Port: int(heldDest.Port()), Addr: heldDest.Addr().As4()}
	for i := 0; i < count/10; i++ {
		unix.Sendto(fd, []byte("kfloor"), 0, sa)
	}
	start := time.Now()
	for i := 0; i < count; i++ {
		err = unix.Sendto(fd, []byte("kfloor"), 0, sa)
	}
	fmt.Printf("%d %v\n", time.Since(start).Nanoseconds()/int64(count), err)
	return 0
}

const markSends = 100

// markVictim writes "mark I" on stdout and then sends to heldDest, I from
// 0 to markSends (after: the send first, then the line), as a test's
// output marks it before the call it makes. It prints "unreach N eperm N"
// at the end.
func markVictim(after bool) int {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, "victim:", err)
		return 1
	}
	sa := &unix.SockaddrInet4{Port: int(heldDest.Port()), Addr: heldDest.Addr().As4()}
	var unreach, eperm int
	for i := 0; i < markSends; i++ {
		mark := func() { fmt.Printf("mark %d\n", i) } // one write(2) to the pipe
		if !after {
			mark()
		}
		switch unix.Sendto(fd, []byte("kfloor"), 0, sa) {
		case unix.ENETUNREACH:
			unreach++
		case unix.EPERM:
			eperm++
		}
		if after {
			mark()
		}
	}
	fmt.Printf("unreach %d eperm %d\n", unreach, eperm)
	return 0
}

// goroutineVictim makes one UDP send to heldDest from a goroutine it
// starts, waiting for it meanwhile, and prints the send's errno.
func goroutineVictim() int {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, "victim:", err)
		return 1
	}
	sa := &unix.SockaddrInet4{Port: int(heldDest.Port()), Addr: heldDest.Addr().As4()}
	done := make(chan error)
	go func() { done <- unix.Sendto(fd, []byte("kfloor"), 0, sa) }()
	fmt.Println(<-done)
	return 0
}

// redirectVictim listens on redirect4 and redirect6, sends "q4" to
// dnsDest4, "q6" to dnsDest6 and "q" to refusedDest, and prints each
// send's result and what each listener read: "ok ok connection refused
// | q4 | q6".
func redirectVictim() int {
	l4, err4 := netListenUDP(redirect4)
	l6, err6 := netListenUDP(redirect6)
	if err := errors.Join(err4, err6); err != nil {
		fmt.Fprintln(os.Stderr, "victim:", err)
		return 1
	}
	var res []string
	for _, c := range []struct {
		to  netip.AddrPort
		msg string
	}{{dnsDest4, "q4"}, {dnsDest6, "q6"}, {refusedDest, "q"}} {
		family := unix.AF_INET6
		var sa unix.Sockaddr = &unix.SockaddrInet6{Port: int(c.to.Port()), Addr: c.to.Addr().As16()}
		if c.to.Addr().Is4() {
			family = unix.AF_INET
			sa = &unix.SockaddrInet4{Port: int(c.to.Port()), Addr: c.to.Addr().As4()}
		}
		fd, err := unix.Socket(family, unix.SOCK_DGRAM, 0)
		if err == nil {
			err = unix.Sendto(fd, []byte(c.msg), 0, sa)
			unix.Close(fd)
		}
		r := "ok"
		if err != nil {
			r = err.Error()
		}
		res = append(res, r)
	}
	fmt.Printf("%s | %s | %s\n", strings.Join(res, ","), l4.first(time.Second), l6.first(time.Second))
	return 0
}
