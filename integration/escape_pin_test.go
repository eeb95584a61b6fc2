package integration

import (
	"fmt"
	"net/netip"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/integration/internal/harness"
	"github.com/nettrap/nettrap/integration/internal/lab"
)

// sendSentinelFrame sends a UDP datagram holding token from inside to the
// outside (unconfined): on the veth it comes after anything sent before.
func sendSentinelFrame(t *testing.T, e labEnv, token string) {
	t.Helper()
	c, err := e.Dial("udp", netip.AddrPortFrom(lab.Outside4, 9))
	if err != nil {
		t.Fatalf("sentinel: %v", err)
	}
	defer c.Close()
	if _, err := c.Write([]byte(token)); err != nil {
		t.Fatalf("sentinel: %v", err)
	}
}

// synTo matches a TCP SYN to dst.
func synTo(dst netip.AddrPort) func(lab.Record) bool {
	return func(r lab.Record) bool {
		p, ok := lab.ParseFrame(r.Data)
		if !ok || p.Proto != unix.IPPROTO_TCP || len(p.Payload) < 14 {
			return false
		}
		a, _ := netip.AddrFromSlice(p.Dst)
		port := uint16(p.Payload[2])<<8 | uint16(p.Payload[3])
		return a.Unmap() == dst.Addr() && port == dst.Port() && p.Payload[13]&0x02 != 0
	}
}

// TestEscapeInterfacePin: a send "to loopback" pinned to the veth leaves
// through it (IP_UNICAST_IF, IPV6_UNICAST_IF, an IP_PKTINFO or
// IPV6_PKTINFO control message, SO_BINDTODEVICE, SO_BINDTOIFINDEX), as
// root and as nobody. Under nettrap the pin is refused (EPERM, audited as
// interface-pin) and nothing arrives.
func TestEscapeInterfacePin(t *testing.T) {
	lab.OuterDenies(t, "sends pinned to an interface other than lo")
	e := newLabEnv(t)
	idx := strconv.Itoa(e.InsideIndex)
	type pinCase struct {
		name string
		args func(marker string) []string // escapee's arguments
		sent func(marker string) func(lab.Record) bool
		line string // in nettrap's blocked line
	}
	udp := func(name, dst, opt, line string) pinCase {
		return pinCase{name,
			func(m string) []string { return []string{"udp", dst, m, opt} },
			containing, line}
	}
	syn := netip.MustParseAddrPort("127.0.0.2:4243")
	cases := []pinCase{
		udp("udp4 IP_UNICAST_IF", "127.0.0.2:9", "unicast-if="+idx, "setsockopt"),
		udp("udp6 IPV6_UNICAST_IF", "[::1]:9", "unicast-if="+idx, "setsockopt"),
		udp("udp4 IP_PKTINFO message", "127.0.0.2:9", "pktinfo="+idx, "sendmsg"),
		udp("udp6 IPV6_PKTINFO message", "[::1]:9", "pktinfo="+idx, "sendmsg"),
		udp("udp4 SO_BINDTODEVICE", "127.0.0.2:9", "bindtodevice="+lab.InsideLink, "setsockopt"),
		udp("udp4 SO_BINDTOIFINDEX", "127.0.0.2:9", "bindtoifindex="+idx, "setsockopt"),
		{"tcp4 SO_BINDTODEVICE",
			func(string) []string { return []string{"tcp", syn.String(), "bindtodevice=" + lab.InsideLink} },
			func(string) func(lab.Record) bool { return synTo(syn) }, "setsockopt"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			harness.ForUsers(t, []harness.User{harness.AsSelf, harness.AsNobody}, func(t *testing.T, u harness.User) {
				marker := fmt.Sprintf("pin %s %s unguarded", c.name, u)
				mustEscape(t, e.run(t, u, append([]string{e.bins.Escapee}, c.args(marker)...)...))
				waitFrame(t, e, "the unguarded pinned send", c.sent(marker))

				marker = fmt.Sprintf("pin %s %s guarded", c.name, u)
				r := e.guarded(t, u, nil, append([]string{e.bins.Escapee}, c.args(marker)...)...)
				mustBeDenied(t, r, "EPERM", c.line, "interface-pin")
				sentinel := fmt.Sprintf("sentinel after pin %s %s", c.name, u)
				sendSentinelFrame(t, e, sentinel)
				leak := c.sent(marker)
				if c.name == "tcp4 SO_BINDTODEVICE" {
					// The unguarded SYN went before: only frames after it count.
					leak = func(r lab.Record) bool { return false }
				}
				noFrameBefore(t, e, leak, containing(sentinel))
			})
		})
	}
}

// TestEscapeSourceRouteMessage: a UDP send "to loopback" that carries a
// loose source route in an IP_RETOPTS control message goes to the route's
// first hop, out through the veth (root: the option needs CAP_NET_RAW).
// Under nettrap it fails with EPERM, denied, and nothing leaves: the
// notify engine reads the control message; under the kernel engine the
// kernel refuses it (the tree has no CAP_NET_RAW over the starting
// namespace), and its backstop drops any packet with IPv4 options.
func TestEscapeSourceRouteMessage(t *testing.T) {
	lab.OuterDenies(t, "a source-routed send through the veth")
	lab.RequireRoot(t)
	e := newLabEnv(t)
	args := func(marker string) []string {
		return []string{e.bins.Escapee, "udp", "127.0.0.1:9", marker, "lsrr=" + lab.Outside4.String()}
	}
	marker := "lsrr message unguarded"
	mustEscape(t, e.run(t, harness.AsSelf, args(marker)...))
	waitFrame(t, e, "the source-routed datagram", containing(marker))

	marker = "lsrr message guarded"
	r := e.guarded(t, harness.AsSelf, nil, args(marker)...)
	if lab.TestVariant(t) == lab.VariantKernel {
		// The send is the kernel's, and the kernel refuses the option
		// itself: the tree's root, in a user namespace of its own, has
		// no CAP_NET_RAW over the starting namespace (unrecorded; the
		// backstop would drop the packet otherwise).
		mustFailWith(t, r, "EPERM")
	} else {
		mustBeDenied(t, r, "EPERM", "sendmsg", "")
	}
	sentinel := "sentinel after the lsrr message"
	sendSentinelFrame(t, e, sentinel)
	noFrameBefore(t, e, containing(marker), containing(sentinel))
}
