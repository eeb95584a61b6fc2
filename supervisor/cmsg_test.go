package supervisor

import (
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

func cmsg(level, typ int32, data []byte) []byte {
	b := make([]byte, unix.CmsgSpace(len(data)))
	h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
	h.Level, h.Type = level, typ
	h.SetLen(unix.CmsgLen(len(data)))
	copy(b[unix.CmsgLen(0):], data)
	return b
}

func TestHasSourceRoute(t *testing.T) {
	gso := cmsg(unix.SOL_UDP, unix.UDP_SEGMENT, []byte{0x10, 0x05})
	retopts := cmsg(unix.IPPROTO_IP, unix.IP_RETOPTS, []byte{131, 7, 4, 10, 0, 0, 1, 1})
	rthdr := cmsg(unix.IPPROTO_IPV6, unix.IPV6_RTHDR, make([]byte, 24))
	tests := []struct {
		name string
		b    []byte
		want bool
	}{
		{"none", nil, false},
		{"gso only", gso, false},
		{"retopts", retopts, true},
		{"retopts after gso", append(append([]byte{}, gso...), retopts...), true},
		{"ipv6 rthdr", rthdr, true},
		{"ipv6 2292 rthdr", cmsg(unix.IPPROTO_IPV6, unix.IPV6_2292RTHDR, make([]byte, 24)), true},
		{"tos", cmsg(unix.IPPROTO_IP, unix.IP_TOS, []byte{1, 0, 0, 0}), false},
		{"truncated header", retopts[:10], false},
		{"length past the end", func() []byte { b := append([]byte{}, retopts...); b[0] = 200; return b }(), false},
	}
	for _, tt := range tests {
		if got := hasSourceRoute(tt.b); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

func FuzzHasSourceRoute(f *testing.F) {
	f.Add(cmsg(unix.IPPROTO_IP, unix.IP_RETOPTS, []byte{131, 7, 4, 10, 0, 0, 1, 1}))
	f.Fuzz(func(t *testing.T, b []byte) { hasSourceRoute(b) })
}
