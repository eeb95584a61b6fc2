package decode

import (
	"encoding/binary"
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

// inPktinfo is a struct in_pktinfo naming interface ifindex.
func inPktinfo(ifindex int) []byte {
	b := make([]byte, sizeofInPktinfo)
	binary.NativeEndian.PutUint32(b, uint32(ifindex))
	return b
}

// in6Pktinfo is a struct in6_pktinfo naming interface ifindex.
func in6Pktinfo(ifindex int) []byte {
	b := make([]byte, sizeofIn6Pktinfo)
	binary.NativeEndian.PutUint32(b[16:], uint32(ifindex))
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
		if got := scanControl(tt.b).sourceRoute; got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

func FuzzScanControl(f *testing.F) {
	f.Add(cmsg(unix.IPPROTO_IP, unix.IP_RETOPTS, []byte{131, 7, 4, 10, 0, 0, 1, 1}))
	f.Fuzz(func(t *testing.T, b []byte) { scanControl(b) })
}

func TestScanControlPktinfo(t *testing.T) {
	in4 := func(ifindex int) []byte {
		b := inPktinfo(ifindex)
		copy(b[4:], []byte{10, 0, 0, 2}) // spec_dst: a source address, not a route
		return b
	}
	in6 := in6Pktinfo
	gso := cmsg(unix.SOL_UDP, unix.UDP_SEGMENT, []byte{0x10, 0x05})
	tests := []struct {
		name string
		b    []byte
		want string
	}{
		{"ip pktinfo 0", cmsg(unix.IPPROTO_IP, unix.IP_PKTINFO, in4(0)), ""},
		{"ip pktinfo lo", cmsg(unix.IPPROTO_IP, unix.IP_PKTINFO, in4(1)), ""},
		{"ip pktinfo 2", cmsg(unix.IPPROTO_IP, unix.IP_PKTINFO, in4(2)), "ifindex 2"},
		{"ip pktinfo 2 after gso", append(append([]byte{}, gso...), cmsg(unix.IPPROTO_IP, unix.IP_PKTINFO, in4(2))...), "ifindex 2"},
		{"ip pktinfo short", cmsg(unix.IPPROTO_IP, unix.IP_PKTINFO, in4(2)[:8]), ""},
		{"ipv6 pktinfo 7", cmsg(unix.IPPROTO_IPV6, unix.IPV6_PKTINFO, in6(7)), "ifindex 7"},
		{"ipv6 2292 pktinfo 7", cmsg(unix.IPPROTO_IPV6, unix.IPV6_2292PKTINFO, in6(7)), "ifindex 7"},
		{"ipv6 pktinfo lo", cmsg(unix.IPPROTO_IPV6, unix.IPV6_PKTINFO, in6(1)), ""},
		// The IPv6 pktinfo's number at the IPv4 level is IP_UNICAST_IF's: no pin.
		{"ipv6 pktinfo at IPv4 level", cmsg(unix.IPPROTO_IP, unix.IPV6_PKTINFO, in6(7)), ""},
		{"first pin wins", append(cmsg(unix.IPPROTO_IP, unix.IP_PKTINFO, in4(3)), cmsg(unix.IPPROTO_IPV6, unix.IPV6_PKTINFO, in6(4))...), "ifindex 3"},
	}
	for _, tt := range tests {
		if got := scanControl(tt.b).pin; got != tt.want {
			t.Errorf("%s: pin %q, want %q", tt.name, got, tt.want)
		}
	}
}
