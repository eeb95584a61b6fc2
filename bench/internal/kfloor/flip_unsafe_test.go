package main

import (
	"net"
	"net/netip"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// flipAddr is a sockaddr_in in memory that one goroutine rewrites while
// another passes its address to sendto: the kernel copies it at each try.
type flipAddr struct{ rsa unix.RawSockaddrInet4 }

func newFlipAddr(ap netip.AddrPort) *flipAddr {
	f := &flipAddr{}
	f.rsa.Family = unix.AF_INET
	f.set(ap)
	return f
}

// set rewrites the address and port, each as one aligned store.
func (f *flipAddr) set(ap netip.AddrPort) {
	a := ap.Addr().As4()
	p := ap.Port()
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&f.rsa.Addr)), *(*uint32)(unsafe.Pointer(&a)))
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&f.rsa.Family)), uint32(unix.AF_INET)|uint32(p>>8|p<<8)<<16)
}

// sendto sends one datagram on fd to whatever f holds when the kernel
// copies it.
func (f *flipAddr) sendto(fd int) error {
	msg := []byte("kfloor")
	_, _, errno := unix.Syscall6(unix.SYS_SENDTO, uintptr(fd), uintptr(unsafe.Pointer(&msg[0])), uintptr(len(msg)),
		0, uintptr(unsafe.Pointer(&f.rsa)), unix.SizeofSockaddrInet4)
	if errno != 0 {
		return errno
	}
	return nil
}

// udpCounter counts the datagrams that reach a listener.
type udpCounter struct{ c *net.UDPConn }

func netListenUDP(ap netip.AddrPort) (*udpCounter, error) {
	c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(ap))
	if err != nil {
		return nil, err
	}
	return &udpCounter{c}, nil
}

// drain counts what arrives until nothing has for quiet.
func (u *udpCounter) drain(quiet time.Duration) int {
	n := 0
	buf := make([]byte, 64)
	for {
		u.c.SetReadDeadline(time.Now().Add(quiet))
		if _, err := u.c.Read(buf); err != nil {
			return n
		}
		n++
	}
}

// drainFrom counts what arrives per source port until nothing has for
// quiet.
func (u *udpCounter) drainFrom(quiet time.Duration) map[int]int {
	from := map[int]int{}
	buf := make([]byte, 64)
	for {
		u.c.SetReadDeadline(time.Now().Add(quiet))
		_, src, err := u.c.ReadFromUDPAddrPort(buf)
		if err != nil {
			return from
		}
		from[int(src.Port())]++
	}
}

// first is the first datagram that arrives within wait, "" for none.
func (u *udpCounter) first(wait time.Duration) string {
	buf := make([]byte, 64)
	u.c.SetReadDeadline(time.Now().Add(wait))
	n, err := u.c.Read(buf)
	if err != nil {
		return ""
	}
	return string(buf[:n])
}

// loUp brings lo up in the victim's namespace and puts extra on it (a /32).
func loUp(extra netip.Addr) error {
	lo, err := netlink.LinkByName("lo")
	if err == nil {
		err = netlink.LinkSetUp(lo)
	}
	if err == nil {
		err = netlink.AddrAdd(lo, &netlink.Addr{IPNet: &net.IPNet{IP: extra.AsSlice(), Mask: net.CIDRMask(32, 32)}})
	}
	return err
}

// rawUnix connects fd to (or, dgram, sends one datagram to) the unix
// address whose sun_path is exactly path, with no NUL added.
func rawUnix(fd int, path string, dgram bool) error {
	var sa unix.RawSockaddrUnix
	sa.Family = unix.AF_UNIX
	n := copy(unsafe.Slice((*byte)(unsafe.Pointer(&sa.Path[0])), len(sa.Path)), path)
	size := uintptr(2 + n)
	var errno unix.Errno
	if dgram {
		msg := []byte("kfloor")
		_, _, errno = unix.Syscall6(unix.SYS_SENDTO, uintptr(fd), uintptr(unsafe.Pointer(&msg[0])), uintptr(len(msg)),
			0, uintptr(unsafe.Pointer(&sa)), size)
	} else {
		_, _, errno = unix.Syscall(unix.SYS_CONNECT, uintptr(fd), uintptr(unsafe.Pointer(&sa)), size)
	}
	if errno != 0 {
		return errno
	}
	return nil
}
