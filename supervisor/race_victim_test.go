package supervisor_test

import (
	"fmt"
	"net/netip"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// raceConnect is the CONTINUE race of seccomp_unotify(2): one goroutine
// connects, again and again, with a sockaddr that says the allowed
// address, while another flips the address word to the denied one and
// back. Under CONTINUE the kernel reads the sockaddr a second time, after
// the supervisor looked, and some connects reach the denied address; an
// emulated connect uses the bytes that were checked. It counts, with
// getpeername, the connects that reached denied, and stops after tries,
// or at the first one when untilLeak.
func raceConnect(allowed, denied string, tries int, untilLeak bool) string {
	ok, bad := netip.MustParseAddrPort(allowed), netip.MustParseAddrPort(denied)
	// sockaddr_in: family, port (big-endian), address; 8-byte aligned, so
	// the address word at offset 4 is aligned for atomic stores.
	var sa [2]uint64
	b := (*[16]byte)(unsafe.Pointer(&sa))
	b[0], b[1] = unix.AF_INET, 0
	b[2], b[3] = byte(ok.Port()>>8), byte(ok.Port())
	word := (*uint32)(unsafe.Pointer(&b[4]))
	a4, d4 := ok.Addr().As4(), bad.Addr().As4()
	okWord, badWord := *(*uint32)(unsafe.Pointer(&a4)), *(*uint32)(unsafe.Pointer(&d4))
	atomic.StoreUint32(word, okWord)
	var stop atomic.Bool
	go func() {
		for !stop.Load() {
			atomic.StoreUint32(word, badWord)
			atomic.StoreUint32(word, okWord)
		}
	}()
	defer stop.Store(true)
	leaked, i := 0, 0
	for ; i < tries && !(untilLeak && leaked > 0); i++ {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return "socket:" + unix.ErrnoName(err.(unix.Errno))
		}
		// No TIME_WAIT left behind: tens of thousands of tries would
		// otherwise run out of ephemeral ports.
		unix.SetsockoptLinger(fd, unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1, Linger: 0})
		_, _, e := unix.Syscall(unix.SYS_CONNECT, uintptr(fd), uintptr(unsafe.Pointer(b)), 16)
		if e == 0 {
			if p, err := unix.Getpeername(fd); err == nil {
				if in4, ok := p.(*unix.SockaddrInet4); ok && in4.Addr == d4 {
					leaked++
				}
			}
		}
		unix.Close(fd)
	}
	return fmt.Sprintf("leaked:%d", leaked)
}

// udpExchange connects a UDP socket to addr, sends "query" and prints
// the result of each step and the reply ("ok ok reply:…", "EPERM"). With
// sendto it sends on the unconnected socket instead (and prints "ok" for
// the connect it did not make).
func udpExchange(addr string, sendto bool) string {
	sa, fam := sockaddr(addr)
	fd, err := unix.Socket(fam, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return result(err)
	}
	defer unix.Close(fd)
	if sendto {
		if err := unix.Sendto(fd, []byte("query"), 0, sa); err != nil {
			return result(err)
		}
	} else if err := unix.Connect(fd, sa); err != nil {
		return result(err)
	} else if _, err := unix.Write(fd, []byte("query")); err != nil {
		return "ok " + result(err)
	}
	unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Sec: 20})
	buf := make([]byte, 64)
	n, err := unix.Read(fd, buf)
	// A read on a socket with SO_RCVTIMEO is never restarted after a
	// signal handler (signal(7)), SA_RESTART or not: a SIGURG of Go's
	// runtime makes it EINTR (seen once in arm64 6.12's guest). The
	// reply is what the test wants, so read again.
	for err == unix.EINTR {
		n, err = unix.Read(fd, buf)
	}
	if err != nil {
		return "ok ok " + result(err)
	}
	return "ok ok reply:" + string(buf[:n])
}
