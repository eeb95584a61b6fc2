package main

// The only file of this package that uses unsafe: what x/sys/unix has no
// wrapper for (AF_XDP, struct rtentry, the legacy netfilter tables).

import (
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

func sliceAddr(b []byte) uint64 { return uint64(uintptr(unsafe.Pointer(&b[0]))) }

func mmapOffsets(fd int) (unix.XDPMmapOffsets, error) {
	var off unix.XDPMmapOffsets
	n := uint32(unsafe.Sizeof(off))
	_, _, errno := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_XDP, unix.XDP_MMAP_OFFSETS,
		uintptr(unsafe.Pointer(&off)), uintptr(unsafe.Pointer(&n)), 0)
	if errno != 0 {
		return off, errno
	}
	return off, nil
}

// publish stores the ring's producer index with release order, after the
// descriptor it covers.
func publish(ring []byte, off uint64, v uint32) {
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&ring[off])), v)
}

// ioctlBuf issues ioctl(fd, req, buf) with buf's address: a request
// whose struct x/sys/unix has no wrapper for (struct rtentry).
func ioctlBuf(fd int, req uint, buf []byte) error {
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(unsafe.Pointer(&buf[0])))
	if errno != 0 {
		return errno
	}
	return nil
}

// getsockoptBuf is getsockopt(fd, level, opt) into buf, which carries
// input too (ipt_getinfo's table name); it returns the length written.
func getsockoptBuf(fd, level, opt int, buf []byte) (int, error) {
	n := uint32(len(buf))
	_, _, errno := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), uintptr(level), uintptr(opt),
		uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&n)), 0)
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}
