// Package cmsgtest builds control messages for tests that send them to
// the kernel (supervisor's external tests, internal/decode's): one copy
// of the builders instead of one per test package.
package cmsgtest

import (
	"encoding/binary"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Cmsg is one control message of level and type typ carrying data.
func Cmsg(level, typ int32, data []byte) []byte {
	b := make([]byte, unix.CmsgSpace(len(data)))
	h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
	h.Level, h.Type = level, typ
	h.SetLen(unix.CmsgLen(len(data)))
	copy(b[unix.CmsgLen(0):], data)
	return b
}

// InPktinfo is a struct in_pktinfo (12 bytes) naming interface ifindex.
func InPktinfo(ifindex int) []byte {
	b := make([]byte, 12)
	binary.NativeEndian.PutUint32(b, uint32(ifindex))
	return b
}

// In6Pktinfo is a struct in6_pktinfo (20 bytes) naming interface ifindex.
func In6Pktinfo(ifindex int) []byte {
	b := make([]byte, 20)
	binary.NativeEndian.PutUint32(b[16:], uint32(ifindex))
	return b
}
