package integration

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/integration/internal/fakehost"
	"github.com/nettrap/nettrap/integration/internal/harness"
	"github.com/nettrap/nettrap/integration/internal/sandbox"
)

func TestSandboxAddressesOnLo(t *testing.T) {
	sandbox.Require(t)
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		t.Fatal(err)
	}
	list, err := netlink.AddrList(lo, netlink.FAMILY_ALL)
	if err != nil {
		t.Fatal(err)
	}
	var have []netip.Addr
	for _, a := range list {
		ip, _ := netip.AddrFromSlice(a.IP)
		have = append(have, ip.Unmap())
	}
	for _, a := range sandbox.Addrs() {
		if !slices.Contains(have, a) {
			t.Errorf("%s is not on lo (have %v)", a, have)
			continue
		}
		ln, err := net.Listen("tcp", netip.AddrPortFrom(a, 0).String())
		if err != nil {
			t.Errorf("listen on %s: %v", a, err)
			continue
		}
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Errorf("dial %s: %v", ln.Addr(), err)
		} else {
			c.Close()
		}
		ln.Close()
	}
}

// TestSandboxHasNoWayOut proves the premise of every other test: besides lo
// there is no interface and no route.
func TestSandboxHasNoWayOut(t *testing.T) {
	sandbox.Require(t)
	ifs, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, ifi := range ifs {
		if ifi.Name != "lo" {
			t.Errorf("unexpected interface %q in the sandbox", ifi.Name)
		}
	}
	// An address outside everything the sandbox put on lo: no route at all.
	_, err = netlink.RouteGet(net.ParseIP("198.51.100.200"))
	if !errors.Is(err, unix.ENETUNREACH) {
		t.Errorf("route to 198.51.100.200: got %v, want ENETUNREACH", err)
	}
	_, err = netlink.RouteGet(net.ParseIP("2001:db8::200"))
	if !errors.Is(err, unix.ENETUNREACH) {
		t.Errorf("route to 2001:db8::200: got %v, want ENETUNREACH", err)
	}
}

func TestSandboxResolvConf(t *testing.T) {
	sandbox.Require(t)
	got, err := os.ReadFile("/etc/resolv.conf")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != sandbox.ResolvConf() {
		t.Fatalf("/etc/resolv.conf:\n%s\nwant:\n%s", got, sandbox.ResolvConf())
	}
	var servers []netip.Addr
	sc := bufio.NewScanner(strings.NewReader(string(got)))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] == "nameserver" {
			servers = append(servers, netip.MustParseAddr(f[1]))
		}
	}
	if !slices.Equal(servers, sandbox.Nameservers()) {
		t.Errorf("nameservers %v, want %v", servers, sandbox.Nameservers())
	}
	own, err := os.ReadFile(sandbox.ResolvConfPath())
	if err != nil || string(own) != string(got) {
		t.Errorf("ResolvConfPath %q: %v, content %q", sandbox.ResolvConfPath(), err, own)
	}
}

// TestSandboxMountIsPrivate checks that the resolv.conf bind mount cannot
// propagate to the host: it must not be in a shared peer group.
func TestSandboxMountIsPrivate(t *testing.T) {
	sandbox.Require(t)
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for line := range strings.SplitSeq(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 7 || f[4] != "/etc/resolv.conf" {
			continue
		}
		found = true
		if strings.Contains(line, "shared:") {
			t.Errorf("resolv.conf mount is shared: %s", line)
		}
	}
	if !found {
		t.Error("no mount on /etc/resolv.conf in /proc/self/mountinfo")
	}
}

// TestFakeDNSOverTCP resolves through the TCP side of the fake DNS, from
// this process, with the resolv.conf of the sandbox.
func TestFakeDNSOverTCP(t *testing.T) {
	h := fakehost.Start(t, fakehost.TCP("192.0.2.53:53"), fakehost.TCP("[2001:db8::53]:53"))
	mark := h.Mark()
	var d net.Dialer
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, addr string) (net.Conn, error) {
		return d.DialContext(ctx, "tcp", addr)
	}}
	addrs, err := r.LookupHost(t.Context(), "tcp-probe.example")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(addrs, []string{fakehost.DNSAnswerV4.String()}) {
		t.Errorf("lookup: %v, want [%s]", addrs, fakehost.DNSAnswerV4)
	}
	rec, ok := h.WaitFor(mark, fakehost.Queried("tcp-probe.example"), harness.Timeout)
	if !ok || rec.Proto != "tcp" {
		t.Errorf("no TCP query recorded for tcp-probe.example:\n%s", h.Dump())
	}
}
