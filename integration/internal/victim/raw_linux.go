package main

// The only file of this package that uses unsafe: the raw syscalls whose
// arguments x/sys/unix has no wrapper for.

import (
	"net/netip"
	"unsafe"

	"golang.org/x/sys/unix"
)

// rawSockaddr encodes ap as the kernel's sockaddr_in/sockaddr_in6.
func rawSockaddr(ap netip.AddrPort) ([]byte, error) {
	port := ap.Port()
	if ap.Addr().Is4() {
		var sa unix.RawSockaddrInet4
		sa.Family = unix.AF_INET
		sa.Port = port>>8 | port<<8
		sa.Addr = ap.Addr().As4()
		return unsafe.Slice((*byte)(unsafe.Pointer(&sa)), unsafe.Sizeof(sa)), nil
	}
	sa6, err := sockaddr(ap)
	if err != nil {
		return nil, err
	}
	var sa unix.RawSockaddrInet6
	sa.Family = unix.AF_INET6
	sa.Port = port>>8 | port<<8
	sa.Addr = ap.Addr().As16()
	sa.Scope_id = sa6.(*unix.SockaddrInet6).ZoneId
	return unsafe.Slice((*byte)(unsafe.Pointer(&sa)), unsafe.Sizeof(sa)), nil
}

// sendmmsg2 sends p to a1 and a2 in one sendmmsg(2) vector of two messages.
func sendmmsg2(fd int, a1, a2 netip.AddrPort, p []byte) (int, error) {
	var msgs [2]unix.Mmsghdr
	iov := unix.Iovec{Base: &p[0]}
	iov.SetLen(len(p))
	for i, ap := range []netip.AddrPort{a1, a2} {
		sa, err := rawSockaddr(ap)
		if err != nil {
			return 0, err
		}
		msgs[i].Hdr.Name = &sa[0]
		msgs[i].Hdr.Namelen = uint32(len(sa))
		msgs[i].Hdr.Iov = &iov
		msgs[i].Hdr.SetIovlen(1)
	}
	n, _, e := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(fd), uintptr(unsafe.Pointer(&msgs[0])), 2, 0, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// sendtoUnspec is sendto(2) with an IPv4 sockaddr labelled AF_UNSPEC.
func sendtoUnspec(fd int, ap netip.AddrPort, p []byte) error {
	sa, err := rawSockaddr(ap)
	if err != nil {
		return err
	}
	sa[0], sa[1] = 0, 0 // sa_family = AF_UNSPEC
	_, _, e := unix.Syscall6(unix.SYS_SENDTO, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)),
		0, uintptr(unsafe.Pointer(&sa[0])), uintptr(len(sa)))
	if e != 0 {
		return e
	}
	return nil
}

// ioUringParams is struct io_uring_params; zero means "defaults".
type ioUringParams [120]byte

func ioUringSetupRaw(entries uint32) (int, error) {
	var params ioUringParams
	fd, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(entries), uintptr(unsafe.Pointer(&params)), 0)
	if e != 0 {
		return -1, e
	}
	return int(fd), nil
}

// addr32 returns the address of b[off], which must lie below 4 GiB (memory
// from lowPage), as the 32-bit pointer the i386 ABI wants.
func addr32(b []byte, off int) uint32 {
	return uint32(uintptr(unsafe.Pointer(&b[off])))
}

// lowPage maps a page below 2 GiB (mapLow is MAP_32BIT on amd64): i386 syscalls from a 64-bit
// process only see the low 32 bits of every pointer.
func lowPage() ([]byte, error) {
	b, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|mapLow)
	if err != nil {
		return nil, sysErr("mmap", err)
	}
	if uint64(uintptr(unsafe.Pointer(&b[0])))+4096 > 1<<32 {
		_ = unix.Munmap(b)
		return nil, errHighPage
	}
	return b, nil
}
