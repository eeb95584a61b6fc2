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
	"github.com/nettrap/nettrap/supervisor/internal/targetmem"
)

// addr is where b lies in this process, as a target's pointer.
func addr(b []byte) uint64 { return uint64(uintptr(unsafe.Pointer(&b[0]))) }

// selfCall is a call of kind made by this very thread, and a reader of
// its memory with process_vm_readv, prefetching or not.
func selfCall(kind bpf.Kind, prefetch bool) (*Call, *targetmem.Reader) {
	vm := new(atomic.Bool)
	vm.Store(true)
	c := &Call{}
	c.TID, c.Syscall.Kind = unix.Gettid(), kind
	m := c.Mem(vm)
	m.Prefetch = prefetch
	return c, m
}

// TestPrefetchMsgPayload reads sendmsg headers laid out in this very
// process (process_vm_readv on its own thread): an inet sendmsg of a few
// vectors gets its payload read with the header, gathered in order; any
// other keeps it for the send, with no error of its own (the send fails
// as the kernel would). The address, the control data and the iovec
// array, read together where they can be (prereadMsg), come out as read
// one by one, and an unreadable part fails as it would alone.
func TestPrefetchMsgPayload(t *testing.T) {
	inet := make([]byte, unix.SizeofSockaddrInet4)
	binary.NativeEndian.PutUint16(inet, unix.AF_INET)
	local := make([]byte, 8)
	binary.NativeEndian.PutUint16(local, unix.AF_UNIX)
	copy(local[2:], "/s")
	one, two := []byte("read with "), []byte("the header")
	tos := make([]byte, 20) // an IP_TOS control message, as quic-go sends
	binary.NativeEndian.PutUint64(tos[0:], 20)
	binary.NativeEndian.PutUint32(tos[8:], unix.IPPROTO_IP)
	binary.NativeEndian.PutUint32(tos[12:], unix.IP_TOS)
	tos[16] = 2
	big := make([]byte, MaxDatagram)
	for _, tc := range []struct {
		name     string
		kind     bpf.Kind
		prefetch bool
		sa       []byte
		iov      [][2]uint64 // base, len
		ctl      uint64      // where the control data is (tos, unless 0 or badCtl)
		iovAt    uint64      // where the iovec array is, if not in this process's heap
		want     []byte
		errno    unix.Errno
	}{
		{"inet, two vectors", bpf.SendMsg, true, inet, [][2]uint64{{addr(one), 10}, {addr(two), 10}}, 0, 0, []byte("read with the header"), 0},
		{"an empty vector skipped", bpf.SendMsg, true, inet, [][2]uint64{{addr(one), 10}, {0, 0}, {addr(two), 10}}, 0, 0, []byte("read with the header"), 0},
		{"not emulating", bpf.SendMsg, false, inet, [][2]uint64{{addr(one), 10}}, 0, 0, nil, 0},
		{"unix", bpf.SendMsg, true, local, [][2]uint64{{addr(one), 10}}, 0, 0, nil, 0},
		{"no address", bpf.SendMsg, true, nil, [][2]uint64{{addr(one), 10}}, 0, 0, nil, 0},
		{"sendmmsg", bpf.SendMMsg, true, inet, [][2]uint64{{addr(one), 10}}, 0, 0, nil, 0},
		{"over a datagram", bpf.SendMsg, true, inet, [][2]uint64{{addr(big), MaxDatagram}, {addr(one), 1}}, 0, 0, nil, 0},
		{"a negative length", bpf.SendMsg, true, inet, [][2]uint64{{addr(one), 1 << 63}}, 0, 0, nil, 0},
		{"five vectors", bpf.SendMsg, true, inet, [][2]uint64{{addr(one), 1}, {addr(one), 1}, {addr(one), 1}, {addr(one), 1}, {addr(one), 1}}, 0, 0, nil, 0},
		{"an unmapped vector", bpf.SendMsg, true, inet, [][2]uint64{{addr(one), 10}, {4096, 10}}, 0, 0, nil, 0},
		{"nothing to send", bpf.SendMsg, true, inet, [][2]uint64{{addr(one), 0}}, 0, 0, nil, 0},
		{"with control data", bpf.SendMsg, true, inet, [][2]uint64{{addr(one), 10}}, addr(tos), 0, []byte("read with "), 0},
		{"an unmapped iovec array", bpf.SendMsg, true, inet, [][2]uint64{{addr(one), 10}}, addr(tos), 4096, nil, 0},
		{"unmapped control data", bpf.SendMsg, true, inet, [][2]uint64{{addr(one), 10}}, 4096, 0, nil, unix.EFAULT},
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
		iovAt := tc.iovAt
		if iovAt == 0 {
			iovAt = addr(iov)
		}
		binary.NativeEndian.PutUint64(hdr[16:], iovAt)
		binary.NativeEndian.PutUint64(hdr[24:], uint64(len(tc.iov)))
		if tc.ctl != 0 {
			binary.NativeEndian.PutUint64(hdr[32:], tc.ctl)
			binary.NativeEndian.PutUint64(hdr[40:], uint64(len(tos)))
		}
		c, m := selfCall(tc.kind, tc.prefetch)
		_, errno := readMsgDests(m, c, addr(hdr), 1, len(hdr))
		m.Close()
		runtime.KeepAlive(iov)
		if errno != tc.errno {
			t.Fatalf("%s: errno %v, want %v", tc.name, errno, tc.errno)
		}
		if errno != 0 {
			continue
		}
		if len(c.Msgs) != 1 {
			t.Fatalf("%s: %d messages", tc.name, len(c.Msgs))
		}
		if got := c.Msgs[0].Payload; !bytes.Equal(got, tc.want) || (got == nil) != (tc.want == nil) {
			t.Errorf("%s: payload %q, want %q", tc.name, got, tc.want)
		}
		if !bytes.Equal(c.Msgs[0].Name, tc.sa) {
			t.Errorf("%s: name %x, want %x", tc.name, c.Msgs[0].Name, tc.sa)
		}
		var wantCtl []byte
		if tc.ctl != 0 {
			wantCtl = tos
		}
		if !bytes.Equal(c.Msgs[0].Control, wantCtl) {
			t.Errorf("%s: control %x, want %x", tc.name, c.Msgs[0].Control, wantCtl)
		}
	}
	runtime.KeepAlive(one)
	runtime.KeepAlive(two)
	runtime.KeepAlive(big)
	runtime.KeepAlive(tos)
}

// TestPrereadMsg: a sendmsg's address, control data and iovec array are
// read in one process_vm_readv when two or more are there, and none is
// taken as read when any of them cannot be.
func TestPrereadMsg(t *testing.T) {
	name := make([]byte, unix.SizeofSockaddrInet4)
	binary.NativeEndian.PutUint16(name, unix.AF_INET)
	ctl := make([]byte, 24)
	binary.NativeEndian.PutUint64(ctl, 20)
	iov := make([]byte, 16)
	for _, tc := range []struct {
		test      string
		name, ctl uint64
		prefetch  bool
		want      preread
	}{
		{"all three", addr(name), addr(ctl), true, preread{true, true, true}},
		{"no control data", addr(name), 0, true, preread{name: true, iov: true}},
		{"not emulating: the address and control data", addr(name), addr(ctl), false, preread{name: true, ctl: true}},
		{"one part alone is read on its own", addr(name), 0, false, preread{}},
		{"unmapped control data", addr(name), 4096, true, preread{}},
	} {
		hdr := msghdr{name: tc.name, namelen: int32(len(name)), iov: addr(iov), iovlen: 1}
		if tc.ctl != 0 {
			hdr.control, hdr.controllen = tc.ctl, uint64(len(ctl))
		}
		c, m := selfCall(bpf.SendMsg, tc.prefetch)
		got := c.prereadMsg(m, hdr)
		m.Close()
		if got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.test, got, tc.want)
		}
		if got.name && !bytes.Equal(c.name1[:len(name)], name) || got.ctl && !bytes.Equal(c.ctl1[:len(ctl)], ctl) {
			t.Errorf("%s: the parts read are not the target's bytes", tc.test)
		}
	}
	runtime.KeepAlive(name)
	runtime.KeepAlive(ctl)
	runtime.KeepAlive(iov)
}
