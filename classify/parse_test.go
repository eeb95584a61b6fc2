package classify

import (
	"bytes"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestParseInet4(t *testing.T) {
	d := mustParse(t, sa4(t, "203.0.113.7", 443), OpConnect)
	want := Dest{Family: unix.AF_INET, Addr: netip.MustParseAddrPort("203.0.113.7:443")}
	if d != want {
		t.Fatalf("got %+v, want %+v", d, want)
	}
	if got := d.String(); got != "203.0.113.7:443" {
		t.Errorf("String() = %q", got)
	}
	if got := d.FamilyName(); got != "inet" {
		t.Errorf("FamilyName() = %q", got)
	}
	// Bytes beyond sockaddr_in (up to sockaddr_storage) are ignored.
	long := append(sa4(t, "203.0.113.7", 443), make([]byte, 112)...)
	if d2 := mustParse(t, long, OpSend); d2 != want {
		t.Errorf("128-byte sockaddr_in: got %+v", d2)
	}
}

func TestParseInet6(t *testing.T) {
	tests := []struct {
		name string
		b    []byte
		want string
	}{
		{"full", sa6(t, "2001:db8::1", 80, 0), "[2001:db8::1]:80"},
		{"scope", sa6(t, "fe80::1", 80, 7), "[fe80::1%7]:80"},
		{"rfc2133 no scope", sa6(t, "fe80::1", 80, 7)[:24], "[fe80::1]:80"},
		{"25 bytes: partial scope ignored", sa6(t, "fe80::1", 80, 7)[:25], "[fe80::1]:80"},
		{"mapped shown as IPv4", sa6(t, "::ffff:10.0.0.1", 80, 0), "10.0.0.1:80"},
		{"high port", sa6(t, "2001:db8::2", 65535, 0), "[2001:db8::2]:65535"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := mustParse(t, tt.b, OpConnect)
			if d.Family != unix.AF_INET6 || !d.Addr.Addr().Is6() {
				t.Fatalf("got %+v, want AF_INET6", d)
			}
			if got := d.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestParseInetLengths walks every length 0..25 for AF_INET and AF_INET6.
func TestParseInetLengths(t *testing.T) {
	full4 := append(sa4(t, "198.51.100.1", 53), make([]byte, 12)...)
	full6 := sa6(t, "2001:db8::53", 53, 0)
	for n := 0; n <= 25; n++ {
		_, err4 := Parse(full4[:n], OpConnect)
		_, err6 := Parse(full6[:n], OpConnect)
		want4, want6 := error(nil), error(nil)
		if n < 16 {
			want4 = ErrTruncated
		}
		if n < 24 {
			want6 = ErrTruncated
		}
		if !errors.Is(err4, want4) {
			t.Errorf("inet len %d: err %v, want %v", n, err4, want4)
		}
		if !errors.Is(err6, want6) {
			t.Errorf("inet6 len %d: err %v, want %v", n, err6, want6)
		}
	}
}

func TestParseTooLong(t *testing.T) {
	for _, fam := range []uint16{unix.AF_INET, unix.AF_INET6, unix.AF_UNIX, unix.AF_NETLINK, unix.AF_UNSPEC, unix.AF_VSOCK} {
		if _, err := Parse(saFamily(fam, 129), OpSend); !errors.Is(err, ErrTooLong) {
			t.Errorf("family %d len 129: err %v, want ErrTooLong", fam, err)
		}
		if fam == unix.AF_UNIX {
			continue // sockaddr_un is 110 bytes: TestParseUnix
		}
		if _, err := Parse(saFamily(fam, 128), OpConnect); errors.Is(err, ErrTooLong) {
			t.Errorf("family %d len 128: ErrTooLong, want accepted length", fam)
		}
	}
}

func TestParseUnix(t *testing.T) {
	long108 := "/" + strings.Repeat("x", 107)
	tests := []struct {
		name string
		b    []byte
		want Dest
		str  string
	}{
		{"unnamed", saUnix(""), Dest{Family: unix.AF_UNIX, Unnamed: true}, "(unnamed)"},
		{"path no NUL", saUnix("/run/x.sock"), Dest{Family: unix.AF_UNIX, Path: "/run/x.sock"}, "/run/x.sock"},
		{"path NUL terminated", saUnix("/run/x.sock\x00"), Dest{Family: unix.AF_UNIX, Path: "/run/x.sock"}, "/run/x.sock"},
		{"path stops at first NUL", saUnix("/run/x\x00junk"), Dest{Family: unix.AF_UNIX, Path: "/run/x"}, "/run/x"},
		{"path 108 bytes", saUnix(long108), Dest{Family: unix.AF_UNIX, Path: long108}, long108},
		{"abstract", saUnix("\x00abstract"), Dest{Family: unix.AF_UNIX, Abstract: true, Path: "abstract"}, "@abstract"},
		{"abstract keeps NULs", saUnix("\x00a\x00b\x00"), Dest{Family: unix.AF_UNIX, Abstract: true, Path: "a\x00b\x00"}, `@"a\x00b\x00"`},
		{"abstract empty", saUnix("\x00"), Dest{Family: unix.AF_UNIX, Abstract: true}, "@"},
		{"path newline quoted", saUnix("/tmp/a\nb"), Dest{Family: unix.AF_UNIX, Path: "/tmp/a\nb"}, `"/tmp/a\nb"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := mustParse(t, tt.b, OpConnect)
			if d != tt.want {
				t.Fatalf("got %+v, want %+v", d, tt.want)
			}
			if got := d.String(); got != tt.str {
				t.Errorf("String() = %q, want %q", got, tt.str)
			}
		})
	}
	if _, err := Parse(saUnix(long108+"y"), OpConnect); !errors.Is(err, ErrTooLong) {
		t.Errorf("111-byte sockaddr_un: err %v, want ErrTooLong", err)
	}
}

func TestParseNetlinkAndOthers(t *testing.T) {
	for n := 2; n < 12; n++ {
		if _, err := Parse(saFamily(unix.AF_NETLINK, n), OpSend); !errors.Is(err, ErrTruncated) {
			t.Errorf("netlink len %d: err %v, want ErrTruncated", n, err)
		}
	}
	d := mustParse(t, saFamily(unix.AF_NETLINK, 12), OpSend)
	if d != (Dest{Family: unix.AF_NETLINK}) || d.String() != "netlink" || d.FamilyName() != "netlink" {
		t.Errorf("netlink: got %+v %q %q", d, d.String(), d.FamilyName())
	}
	others := []struct {
		fam        uint16
		str, fname string
	}{
		{unix.AF_VSOCK, "AF_VSOCK", "vsock"},
		{unix.AF_PACKET, "AF_PACKET", "packet"},
		{unix.AF_BLUETOOTH, "AF_BLUETOOTH", "bluetooth"},
		{unix.AF_TIPC, "AF_TIPC", "tipc"},
		{unix.AF_CAN, "AF_CAN", "can"},
		{unix.AF_XDP, "AF_XDP", "xdp"},
		{99, "family 99", "family 99"},
	}
	for _, o := range others {
		for _, n := range []int{2, 3, 16, 128} {
			d := mustParse(t, saFamily(o.fam, n), OpConnect)
			if d != (Dest{Family: o.fam}) {
				t.Errorf("family %d len %d: got %+v", o.fam, n, d)
			}
			if d.String() != o.str || d.FamilyName() != o.fname {
				t.Errorf("family %d: String %q FamilyName %q, want %q %q", o.fam, d.String(), d.FamilyName(), o.str, o.fname)
			}
		}
	}
}

func TestParseShort(t *testing.T) {
	for _, b := range [][]byte{nil, {}, {byte(unix.AF_INET)}} {
		if _, err := Parse(b, OpConnect); !errors.Is(err, ErrTruncated) {
			t.Errorf("Parse(% x): err %v, want ErrTruncated", b, err)
		}
	}
}

func TestParseUnspecConnect(t *testing.T) {
	for _, n := range []int{2, 3, 15, 16, 24, 28, 128} {
		b := sa4Family(t, unix.AF_UNSPEC, "203.0.113.7", 443)
		b = append(b, make([]byte, 128)...)[:n]
		d := mustParse(t, b, OpConnect)
		if !d.NoDest || d.String() != "none" || d.FamilyName() != "unspec" {
			t.Errorf("connect AF_UNSPEC len %d: got %+v %q", n, d, d.String())
		}
		if c := (*Resolvers)(nil).Classify(d); c != NoDestination {
			t.Errorf("connect AF_UNSPEC len %d: class %v", n, c)
		}
	}
}

func TestParseUnspecSend(t *testing.T) {
	// Short: no destination (IPv4 would say EINVAL, UDPv6 uses the peer).
	for n := 2; n < 16; n++ {
		d := mustParse(t, saFamily(unix.AF_UNSPEC, n), OpSend)
		if !d.NoDest {
			t.Errorf("send AF_UNSPEC len %d: got %+v, want NoDest", n, d)
		}
	}
	// 16 bytes: read as sockaddr_in, as udp_sendmsg does.
	d := mustParse(t, sa4Family(t, unix.AF_UNSPEC, "203.0.113.7", 443), OpSend)
	want := Dest{Family: unix.AF_INET, Unspec: true, Addr: netip.MustParseAddrPort("203.0.113.7:443")}
	if d != want {
		t.Fatalf("send AF_UNSPEC 16: got %+v, want %+v", d, want)
	}
	if c := (*Resolvers)(nil).Classify(d); c != External {
		t.Errorf("send AF_UNSPEC 16: class %v, want external", c)
	}
}

// TestParseUnspecSendBothReadings: the same 28 bytes are a sockaddr_in to
// udp_sendmsg and a sockaddr_in6 to rawv6/l2tp_ip6. With the socket family
// unknown, the stricter class wins.
func TestParseUnspecSendBothReadings(t *testing.T) {
	b := sa6Family(t, unix.AF_UNSPEC, "2001:db8::7", 443, 0)
	copy(b[4:8], []byte{127, 0, 0, 1}) // v4 reading: 127.0.0.1 (the v6 flowinfo)
	d := mustParse(t, b, OpSend)
	if d.Family != unix.AF_INET || d.Addr != netip.MustParseAddrPort("127.0.0.1:443") {
		t.Fatalf("v4 reading: got %+v", d)
	}
	if d.Unspec6 != netip.MustParseAddrPort("[2001:db8::7]:443") {
		t.Fatalf("v6 reading: got %v", d.Unspec6)
	}
	if c := (*Resolvers)(nil).Classify(d); c != External {
		t.Errorf("unknown socket family: class %v, want external (stricter reading)", c)
	}

	d4, err := ParseIn(b, OpSend, unix.AF_INET)
	if err != nil || d4.Unspec6.IsValid() || (*Resolvers)(nil).Classify(d4) != Loopback {
		t.Errorf("AF_INET socket: got %+v, %v", d4, err)
	}
	d6, err := ParseIn(b, OpSend, unix.AF_INET6)
	if err != nil || d6.Family != unix.AF_INET6 || !d6.Unspec || d6.Addr != netip.MustParseAddrPort("[2001:db8::7]:443") {
		t.Errorf("AF_INET6 socket: got %+v, %v", d6, err)
	}
	for n := 2; n < 24; n++ {
		d, err := ParseIn(bytes.Clone(b[:n]), OpSend, unix.AF_INET6)
		if err != nil || !d.NoDest {
			t.Errorf("AF_INET6 socket len %d: got %+v, %v, want NoDest", n, d, err)
		}
	}
}

func TestInDir(t *testing.T) {
	d := mustParse(t, saUnix("sock"), OpConnect)
	if got := d.InDir("/tmp/work").Path; got != "/tmp/work/sock" {
		t.Errorf("relative: %q", got)
	}
	abs := mustParse(t, saUnix("/tmp/a"), OpConnect)
	if got := abs.InDir("/x").Path; got != "/tmp/a" {
		t.Errorf("absolute changed: %q", got)
	}
	abst := mustParse(t, saUnix("\x00sock"), OpConnect)
	if got := abst.InDir("/x"); got != abst {
		t.Errorf("abstract changed: %+v", got)
	}
	if got := d.InDir("rel"); got != d {
		t.Errorf("relative dir accepted: %+v", got)
	}
}
