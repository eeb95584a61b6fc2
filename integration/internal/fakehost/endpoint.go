package fakehost

import (
	"net/netip"

	"github.com/nettrap/nettrap/integration/internal/sandbox"
)

// Endpoint is one address a Host listens on.
type Endpoint struct {
	Proto string // "tcp" or "udp"
	Addr  netip.AddrPort
}

func (e Endpoint) String() string { return e.Proto + "/" + e.Addr.String() }

// TCP returns a TCP endpoint; s is "ip:port". It panics on a bad address.
func TCP(s string) Endpoint { return Endpoint{"tcp", netip.MustParseAddrPort(s)} }

// UDP returns a UDP endpoint; s is "ip:port". A multicast group is joined on
// lo; 255.255.255.255:port listens on 0.0.0.0:port to catch broadcasts.
func UDP(s string) Endpoint { return Endpoint{"udp", netip.MustParseAddrPort(s)} }

// Both returns the TCP and the UDP endpoint for s.
func Both(s string) []Endpoint { return []Endpoint{TCP(s), UDP(s)} }

var (
	// DNSAnswerV4 is the answer to every A query.
	DNSAnswerV4 = netip.MustParseAddr("203.0.113.7")
	// MDNSGroup is a multicast endpoint served by [Standard].
	MDNSGroup = netip.MustParseAddrPort("224.0.0.251:5353")
	// BroadcastV4 is a limited-broadcast endpoint served by [Standard].
	BroadcastV4 = netip.MustParseAddrPort("255.255.255.255:9")
	// StubResolvers are the well-known local stub resolvers (all in 127/8,
	// so they exist on lo without being added).
	StubResolvers = []netip.Addr{
		netip.MustParseAddr("127.0.0.53"),
		netip.MustParseAddr("127.0.0.54"),
		netip.MustParseAddr("127.0.0.11"),
	}
)

// Standard returns the usual set: tcp 80 and 443 and tcp+udp 53 on every
// sandbox address, tcp+udp 53 on the stub resolvers, the mDNS group and the
// limited broadcast endpoint.
func Standard() []Endpoint {
	var eps []Endpoint
	for _, a := range sandbox.Addrs() {
		eps = append(eps,
			Endpoint{"tcp", netip.AddrPortFrom(a, 80)},
			Endpoint{"tcp", netip.AddrPortFrom(a, 443)},
			Endpoint{"tcp", netip.AddrPortFrom(a, 53)},
			Endpoint{"udp", netip.AddrPortFrom(a, 53)})
	}
	for _, a := range StubResolvers {
		eps = append(eps, Endpoint{"tcp", netip.AddrPortFrom(a, 53)}, Endpoint{"udp", netip.AddrPortFrom(a, 53)})
	}
	return append(eps, Endpoint{"udp", MDNSGroup}, Endpoint{"udp", BroadcastV4})
}
