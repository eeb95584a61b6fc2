package decode

import (
	"testing"

	"github.com/nettrap/nettrap/supervisor/internal/cmsgtest"
	"golang.org/x/sys/unix"
)

func TestHasSourceRoute(t *testing.T) {
	gso := cmsgtest.Cmsg(unix.SOL_UDP, unix.UDP_SEGMENT, []byte{0x10, 0x05})
	retopts := cmsgtest.Cmsg(unix.IPPROTO_IP, unix.IP_RETOPTS, []byte{131, 7, 4, 10, 0, 0, 1, 1})
	rthdr := cmsgtest.Cmsg(unix.IPPROTO_IPV6, unix.IPV6_RTHDR, make([]byte, 24))
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
		{"ipv6 2292 rthdr", cmsgtest.Cmsg(unix.IPPROTO_IPV6, unix.IPV6_2292RTHDR, make([]byte, 24)), true},
		{"tos", cmsgtest.Cmsg(unix.IPPROTO_IP, unix.IP_TOS, []byte{1, 0, 0, 0}), false},
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
	f.Add(cmsgtest.Cmsg(unix.IPPROTO_IP, unix.IP_RETOPTS, []byte{131, 7, 4, 10, 0, 0, 1, 1}))
	f.Fuzz(func(t *testing.T, b []byte) { scanControl(b) })
}

func TestScanControlPktinfo(t *testing.T) {
	in4 := func(ifindex int) []byte {
		b := cmsgtest.InPktinfo(ifindex)
		copy(b[4:], []byte{10, 0, 0, 2}) // spec_dst: a source address, not a route
		return b
	}
	in6 := cmsgtest.In6Pktinfo
	gso := cmsgtest.Cmsg(unix.SOL_UDP, unix.UDP_SEGMENT, []byte{0x10, 0x05})
	tests := []struct {
		name string
		b    []byte
		want string
	}{
		{"ip pktinfo 0", cmsgtest.Cmsg(unix.IPPROTO_IP, unix.IP_PKTINFO, in4(0)), ""},
		{"ip pktinfo lo", cmsgtest.Cmsg(unix.IPPROTO_IP, unix.IP_PKTINFO, in4(1)), ""},
		{"ip pktinfo 2", cmsgtest.Cmsg(unix.IPPROTO_IP, unix.IP_PKTINFO, in4(2)), "ifindex 2"},
		{"ip pktinfo 2 after gso", append(append([]byte{}, gso...), cmsgtest.Cmsg(unix.IPPROTO_IP, unix.IP_PKTINFO, in4(2))...), "ifindex 2"},
		{"ip pktinfo short", cmsgtest.Cmsg(unix.IPPROTO_IP, unix.IP_PKTINFO, in4(2)[:8]), ""},
		{"ipv6 pktinfo 7", cmsgtest.Cmsg(unix.IPPROTO_IPV6, unix.IPV6_PKTINFO, in6(7)), "ifindex 7"},
		{"ipv6 2292 pktinfo 7", cmsgtest.Cmsg(unix.IPPROTO_IPV6, unix.IPV6_2292PKTINFO, in6(7)), "ifindex 7"},
		{"ipv6 pktinfo lo", cmsgtest.Cmsg(unix.IPPROTO_IPV6, unix.IPV6_PKTINFO, in6(1)), ""},
		// The IPv6 pktinfo's number at the IPv4 level is IP_UNICAST_IF's: no pin.
		{"ipv6 pktinfo at IPv4 level", cmsgtest.Cmsg(unix.IPPROTO_IP, unix.IPV6_PKTINFO, in6(7)), ""},
		{"first pin wins", append(cmsgtest.Cmsg(unix.IPPROTO_IP, unix.IP_PKTINFO, in4(3)), cmsgtest.Cmsg(unix.IPPROTO_IPV6, unix.IPV6_PKTINFO, in6(4))...), "ifindex 3"},
	}
	for _, tt := range tests {
		if got := scanControl(tt.b).pin; got != tt.want {
			t.Errorf("%s: pin %q, want %q", tt.name, got, tt.want)
		}
	}
}
