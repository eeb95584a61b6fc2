package supervisor

import (
	"encoding/binary"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/supervisor/internal/ascaller"
)

// Builders of control data, for the external tests that send it to the
// kernel (internal/decode's tests have their own).

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

// DelayLoop delays the loop's goroutine of sessions started from now on.
func DelayLoop(d time.Duration) { testHookBeforeRun = func() { time.Sleep(d) } }

// CallerPoolCaps is what a new caller pool learns nettrap may do: switch
// credentials, and chroot.
func CallerPoolCaps() (canSwitch, canChroot bool, err error) {
	return ascaller.NewPool().Caps()
}
