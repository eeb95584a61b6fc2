package classify

import (
	"net/netip"
	"testing"

	"golang.org/x/sys/unix"
)

func classOfAddr(t *testing.T, r *Resolvers, addr string, port uint16) Class {
	t.Helper()
	a := netip.MustParseAddr(addr)
	var b []byte
	if a.Is4() {
		b = sa4(t, addr, port)
	} else {
		b = sa6(t, addr, port, 0)
	}
	return r.Classify(mustParse(t, b, OpConnect))
}

func TestClassifyBoundaries(t *testing.T) {
	tests := []struct {
		addr string
		want Class
	}{
		{"0.0.0.0", Unspecified},
		{"::", Unspecified},
		{"::ffff:0.0.0.0", Unspecified},
		{"0.0.0.1", External}, // only 0.0.0.0 is routed to loopback
		{"0.255.255.255", External},
		{"127.0.0.1", Loopback},
		{"127.255.255.255", Loopback},
		{"126.255.255.255", External},
		{"128.0.0.1", External},
		{"::1", Loopback},
		{"::ffff:127.0.0.1", Loopback},
		{"::ffff:10.0.0.1", Private},
		{"::127.0.0.1", External}, // v4-compatible is not mapped
		{"::2", External},
		{"10.0.0.0", Private},
		{"10.255.255.255", Private},
		{"9.255.255.255", External},
		{"11.0.0.0", External},
		{"172.15.255.255", External},
		{"172.16.0.0", Private},
		{"172.31.255.255", Private},
		{"172.32.0.0", External},
		{"192.167.255.255", External},
		{"192.168.0.1", Private},
		{"192.168.255.255", Private},
		{"192.169.0.0", External},
		{"100.63.255.255", External},
		{"100.64.0.0", Private},
		{"100.127.255.255", Private},
		{"100.128.0.0", External},
		{"fc00::1", Private},
		{"fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", Private},
		{"fdff::1", Private},
		{"fbff::1", External},
		{"fe00::1", External},
		{"169.254.0.0", LinkLocal},
		{"169.254.169.254", LinkLocal},
		{"169.254.255.255", LinkLocal},
		{"169.253.255.255", External},
		{"169.255.0.0", External},
		{"fe80::1", LinkLocal},
		{"febf::1", LinkLocal},
		{"fec0::1", External}, // deprecated site-local
		{"::ffff:169.254.169.254", LinkLocal},
		{"223.255.255.255", External},
		{"224.0.0.1", Multicast},
		{"239.255.255.255", Multicast},
		{"240.0.0.1", External}, // reserved, not multicast
		{"255.255.255.254", External},
		{"255.255.255.255", Multicast},
		{"ff02::1", Multicast},
		{"ff00::", Multicast},
		{"feff::1", External},
		{"64:ff9b::c000:207", External}, // NAT64
		{"203.0.113.7", External},
		{"198.51.100.1", External},
		{"192.0.2.1", External},
		{"2001:db8::1", External},
	}
	for _, tt := range tests {
		if got := classOfAddr(t, nil, tt.addr, 443); got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.addr, got, tt.want)
		}
		if got := ClassifyAddr(netip.MustParseAddr(tt.addr)); got != tt.want {
			t.Errorf("ClassifyAddr(%s): got %v, want %v", tt.addr, got, tt.want)
		}
	}
}

func TestClassifyZoneIgnored(t *testing.T) {
	d := mustParse(t, sa6(t, "fe80::1", 80, 3), OpConnect)
	if d.Addr.Addr().Zone() != "3" {
		t.Fatalf("zone not kept: %+v", d)
	}
	if c := (*Resolvers)(nil).Classify(d); c != LinkLocal {
		t.Errorf("zoned fe80::1: %v", c)
	}
	d = mustParse(t, sa6(t, "::1", 80, 3), OpConnect)
	if c := (*Resolvers)(nil).Classify(d); c != Loopback {
		t.Errorf("zoned ::1: %v", c)
	}
}

func TestClassifyDNS(t *testing.T) {
	r := &Resolvers{Nameservers: []netip.Addr{
		netip.MustParseAddr("192.0.2.53"),
		netip.MustParseAddr("2001:db8::53"),
		netip.MustParseAddr("fe80::53%eth0"),
		netip.MustParseAddr("::ffff:198.51.100.53"),
		netip.MustParseAddr("10.0.0.53"),
	}}
	tests := []struct {
		r    *Resolvers
		addr string
		port uint16
		want Class
	}{
		{r, "192.0.2.53", 53, DNS},
		{r, "192.0.2.53", 54, External},
		{r, "192.0.2.54", 53, External},
		{r, "::ffff:192.0.2.53", 53, DNS},
		{r, "2001:db8::53", 53, DNS},
		{r, "2001:db8::53", 853, External},
		{r, "fe80::53", 53, DNS},
		{r, "198.51.100.53", 53, DNS}, // listed v4-mapped
		{r, "10.0.0.53", 53, DNS},     // DNS beats private
		{r, "10.0.0.53", 80, Private},
		{r, "127.0.0.53", 53, DNS},
		{r, "127.0.0.53", 54, Loopback},
		{nil, "127.0.0.53", 53, DNS},
		{nil, "127.0.0.54", 53, DNS},
		{nil, "127.0.0.11", 53, DNS},
		{nil, "::ffff:127.0.0.53", 53, DNS},
		{nil, "127.0.0.1", 53, Loopback},
		{nil, "127.0.0.55", 53, Loopback},
		{nil, "192.0.2.53", 53, External},
		{&Resolvers{}, "127.0.0.11", 53, DNS},
	}
	for _, tt := range tests {
		if got := classOfAddr(t, tt.r, tt.addr, tt.port); got != tt.want {
			t.Errorf("%s port %d (resolvers %v): got %v, want %v", tt.addr, tt.port, tt.r != nil, got, tt.want)
		}
	}
	// A zoned destination matches an unzoned nameserver.
	d := mustParse(t, sa6(t, "fe80::53", 53, 9), OpSend)
	if c := r.Classify(d); c != DNS {
		t.Errorf("zoned fe80::53: %v", c)
	}
}

func TestClassifyUnix(t *testing.T) {
	custom := &Resolvers{UnixSockets: []string{"/srv/dns.sock", "@resolver"}}
	none := &Resolvers{UnixSockets: []string{}}
	tests := []struct {
		r    *Resolvers
		b    []byte
		want Class
	}{
		{nil, saUnix("/run/x.sock"), Unix},
		{nil, saUnix(""), Unix},
		{nil, saUnix("\x00some-abstract"), Unix},
		{nil, saUnix("/run/nscd/socket"), DNS},
		{nil, saUnix("/var/run/nscd/socket\x00"), DNS},
		{nil, saUnix("/run/nscd/socket2"), Unix},
		{nil, saUnix("/run//nscd/./socket"), DNS},
		{nil, saUnix("/tmp/../var/run/nscd/socket"), DNS},
		{nil, saUnix("/var/run/../run/nscd/socket"), DNS},
		{nil, saUnix("/proc/self/root/run/nscd/socket"), DNS},
		{nil, saUnix("/proc/1234/root/var/run/nscd/socket"), DNS},
		{nil, saUnix("/proc/thread-self/root/proc/self/root/run/nscd/socket"), DNS},
		{nil, saUnix("/proc/self/cwd/socket"), Unix},
		{nil, saUnix("/run/systemd/resolve/io.systemd.Resolve"), DNS},
		{nil, saUnix("/var/run/systemd/resolve/io.systemd.Resolve"), DNS},
		{nil, saUnix("/run/systemd/resolve/io.systemd.Resolve.Monitor"), DNS},
		{nil, saUnix("/run/systemd/resolve/stub-resolv.conf"), Unix},
		{nil, saUnix("nscd/socket"), DNS},           // relative: fail closed
		{nil, saUnix("../../run/nscd/socket"), DNS}, // relative: fail closed
		{nil, saUnix("var/run/nscd/socket"), DNS},
		{nil, saUnix("test.sock"), Unix},
		{nil, saUnix("\x00/run/nscd/socket"), DNS}, // abstract spelling a resolver path
		{nil, saUnix("\x00socket"), Unix},
		{custom, saUnix("/srv/dns.sock"), DNS},
		{custom, saUnix("/run/nscd/socket"), Unix}, // custom list replaces defaults
		{custom, saUnix("\x00resolver"), DNS},
		{custom, saUnix("resolver"), Unix},
		{custom, saUnix("\x00resolver2"), Unix},
		{none, saUnix("/run/nscd/socket"), Unix},
	}
	for _, tt := range tests {
		d := mustParse(t, tt.b, OpConnect)
		if got := tt.r.Classify(d); got != tt.want {
			t.Errorf("%s (custom=%v): got %v, want %v", d, tt.r != nil, got, tt.want)
		}
	}
	rel := mustParse(t, saUnix("socket"), OpConnect)
	if got := (*Resolvers)(nil).Classify(rel.InDir("/run/nscd")); got != DNS {
		t.Errorf("socket in /run/nscd: %v", got)
	}
	if got := (*Resolvers)(nil).Classify(rel.InDir("/tmp/t")); got != Unix {
		t.Errorf("socket in /tmp/t: %v", got)
	}
}

func TestClassifyFamilies(t *testing.T) {
	tests := []struct {
		d    Dest
		want Class
	}{
		{mustParse(t, saFamily(unix.AF_NETLINK, 12), OpSend), Kernel},
		{mustParse(t, saFamily(unix.AF_VSOCK, 16), OpConnect), OtherFamily},
		{mustParse(t, saFamily(unix.AF_PACKET, 20), OpSend), OtherFamily},
		{mustParse(t, saFamily(unix.AF_BLUETOOTH, 14), OpConnect), OtherFamily},
		{mustParse(t, saFamily(99, 2), OpConnect), OtherFamily},
		{Dest{}, OtherFamily},                  // zero value: fail closed
		{Dest{Family: unix.AF_INET}, External}, // no address: fail closed
		{Dest{Family: unix.AF_INET6}, External},
	}
	for _, tt := range tests {
		if got := (*Resolvers)(nil).Classify(tt.d); got != tt.want {
			t.Errorf("%+v: got %v, want %v", tt.d, got, tt.want)
		}
	}
}

func TestClassStrings(t *testing.T) {
	want := map[Class]struct {
		name  string
		allow bool
	}{
		Loopback:      {"loopback", true},
		Unix:          {"unix", true},
		Kernel:        {"kernel", true},
		DNS:           {"dns", false},
		Unspecified:   {"unspecified", false},
		Private:       {"private", false},
		LinkLocal:     {"link-local", false},
		Multicast:     {"multicast", false},
		External:      {"external", false},
		OtherFamily:   {"other-family", false},
		NoDestination: {"no-destination", true},
		OwnNetns:      {"own-netns", false},
		Class(0):      {"class(0)", false},
		Class(42):     {"class(42)", false},
	}
	for c, w := range want {
		if c.String() != w.name || c.AllowedByDefault() != w.allow {
			t.Errorf("Class(%d): %q %v, want %q %v", int(c), c.String(), c.AllowedByDefault(), w.name, w.allow)
		}
	}
}
