package decode

import (
	"bytes"
	"encoding/binary"
	"runtime"
	"sync/atomic"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/bpf"
)

// addr is where b lies in this process, as a target's pointer.
func addr(b []byte) uint64 { return uint64(uintptr(unsafe.Pointer(&b[0]))) }

// TestPrefetchMsgPayload reads sendmsg headers laid out in this very
// process (process_vm_readv on its own thread): an inet sendmsg of a few
// vectors gets its payload read with the header, gathered in order; any
// other keeps it for the send, with no error of its own (the send fails
// as the kernel would).
func TestPrefetchMsgPayload(t *testing.T) {
	inet := make([]byte, unix.SizeofSockaddrInet4)
	binary.NativeEndian.PutUint16(inet, unix.AF_INET)
	local := make([]byte, 8)
	binary.NativeEndian.PutUint16(local, unix.AF_UNIX)
	copy(local[2:], "/s")
	one, two := []byte("read with "), []byte("the header")
	big := make([]byte, MaxDatagram)
	for _, tc := range []struct {
		name     string
		kind     bpf.Kind
		prefetch bool
		sa       []byte
		iov      [][2]uint64 // base, len
		want     []byte
	}{
		{"inet, two vectors", bpf.SendMsg, true, inet, [][2]uint64{{addr(one), 10}, {addr(two), 10}}, []byte("read with the header")},
		{"an empty vector skipped", bpf.SendMsg, true, inet, [][2]uint64{{addr(one), 10}, {0, 0}, {addr(two), 10}}, []byte("read with the header")},
		{"not emulating", bpf.SendMsg, false, inet, [][2]uint64{{addr(one), 10}}, nil},
		{"unix", bpf.SendMsg, true, local, [][2]uint64{{addr(one), 10}}, nil},
		{"no address", bpf.SendMsg, true, nil, [][2]uint64{{addr(one), 10}}, nil},
		{"sendmmsg", bpf.SendMMsg, true, inet, [][2]uint64{{addr(one), 10}}, nil},
		{"over a datagram", bpf.SendMsg, true, inet, [][2]uint64{{addr(big), MaxDatagram}, {addr(one), 1}}, nil},
		{"a negative length", bpf.SendMsg, true, inet, [][2]uint64{{addr(one), 1 << 63}}, nil},
		{"five vectors", bpf.SendMsg, true, inet, [][2]uint64{{addr(one), 1}, {addr(one), 1}, {addr(one), 1}, {addr(one), 1}, {addr(one), 1}}, nil},
		{"an unmapped vector", bpf.SendMsg, true, inet, [][2]uint64{{addr(one), 10}, {4096, 10}}, nil},
		{"nothing to send", bpf.SendMsg, true, inet, [][2]uint64{{addr(one), 0}}, nil},
	} {
		iov := make([]byte, 16*len(tc.iov))
		for i, v := range tc.iov {
			binary.NativeEndian.PutUint64(iov[16*i:], v[0])
			binary.NativeEndian.PutUint64(iov[16*i+8:], v[1])
		}
		hdr := make([]byte, SizeofMsghdr)
		if tc.sa != nil {
			binary.NativeEndian.PutUint64(hdr[0:], addr(tc.sa))
			binary.NativeEndian.PutUint32(hdr[8:], uint32(len(tc.sa)))
		}
		binary.NativeEndian.PutUint64(hdr[16:], addr(iov))
		binary.NativeEndian.PutUint64(hdr[24:], uint64(len(tc.iov)))
		var vm atomic.Bool
		vm.Store(true)
		c := &Call{}
		c.TID, c.Syscall.Kind = unix.Gettid(), tc.kind
		m := c.Mem(&vm)
		m.Prefetch = tc.prefetch
		_, errno := readMsgDests(m, c, addr(hdr), 1, len(hdr))
		m.Close()
		runtime.KeepAlive(iov)
		if errno != 0 || len(c.Msgs) != 1 {
			t.Fatalf("%s: errno %v, %d messages", tc.name, errno, len(c.Msgs))
		}
		if got := c.Msgs[0].Payload; !bytes.Equal(got, tc.want) || (got == nil) != (tc.want == nil) {
			t.Errorf("%s: payload %q, want %q", tc.name, got, tc.want)
		}
	}
	runtime.KeepAlive(one)
	runtime.KeepAlive(two)
	runtime.KeepAlive(big)
}
