package classify

import (
	"errors"
	"net/netip"
	"testing"

	"golang.org/x/sys/unix"
)

func FuzzParse(f *testing.F) {
	f.Add(sa4(f, "203.0.113.7", 443), uint8(0), uint16(0))
	f.Add(sa6(f, "fe80::1", 53, 2), uint8(1), uint16(unix.AF_INET6))
	f.Add(saUnix("/run/nscd/socket"), uint8(0), uint16(0))
	f.Add(saUnix("\x00abs\x00tract"), uint8(1), uint16(0))
	f.Add(sa6Family(f, unix.AF_UNSPEC, "2001:db8::1", 53, 0), uint8(1), uint16(0))
	f.Add(saFamily(unix.AF_NETLINK, 12), uint8(1), uint16(0))
	f.Add([]byte{}, uint8(0), uint16(0))
	r := &Resolvers{
		Nameservers: []netip.Addr{netip.MustParseAddr("192.0.2.53"), netip.MustParseAddr("fe80::53%1")},
		UnixSockets: append(DefaultResolverSockets(), "@resolver"),
	}
	f.Fuzz(func(t *testing.T, b []byte, op uint8, domain uint16) {
		d, err := ParseIn(b, Op(op%2), domain)
		if err != nil {
			if !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrTooLong) {
				t.Fatalf("unexpected error %v", err)
			}
			if d != (Dest{}) {
				t.Fatalf("error %v with non-zero Dest %+v", err, d)
			}
			return
		}
		if len(b) < 2 || len(b) > 128 {
			t.Fatalf("accepted %d bytes", len(b))
		}
		if d.String() == "" || d.FamilyName() == "" {
			t.Fatalf("empty rendering of %+v", d)
		}
		c := r.Classify(d)
		if c < Loopback || c > NoDestination {
			t.Fatalf("class %d out of range for %+v", int(c), d)
		}
		if c2 := (*Resolvers)(nil).Classify(d); c2 < Loopback || c2 > NoDestination {
			t.Fatalf("nil resolvers: class %d for %+v", int(c2), d)
		}
		checkInetRoundTrip(t, d)
		_ = d.InDir("/tmp").String()
	})
}

// checkInetRoundTrip: an accepted IP destination renders to a string that
// parses back to the same address and port.
func checkInetRoundTrip(t *testing.T, d Dest) {
	if d.Family != unix.AF_INET && d.Family != unix.AF_INET6 || d.NoDest {
		return
	}
	back, err := netip.ParseAddrPort(d.String())
	if err != nil || back != d.Addr {
		t.Fatalf("String %q does not round-trip to %v: %v", d.String(), d.Addr, err)
	}
	if d.Unspec6.IsValid() && d.Family != unix.AF_INET {
		t.Fatalf("Unspec6 set on %+v", d)
	}
}
