package guard

import (
	"net/netip"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/bpf"
	"github.com/nettrap/nettrap/classify"
	"github.com/nettrap/nettrap/decision"
	"github.com/nettrap/nettrap/policy"
)

// Each way round the destination check gets its own denial, record and
// line: another family's socket, an interface pin, a multicast join.
func TestEscapeKindsDeniedAndRecorded(t *testing.T) {
	f := newFixture(t, policy.Policy{})

	xdp := call(bpf.Socket)
	xdp.Socket, xdp.Task = decision.SocketArgs{Domain: unix.AF_XDP, Type: unix.SOCK_RAW}, task("xdp")
	pin := call(bpf.SendMsg, inet("127.0.0.2:53"))
	pin.Pin = "ifindex 2"
	pinOpt := call(bpf.SetSockOpt)
	pinOpt.Pin, pinOpt.Option = `"eth0"`, "SO_BINDTODEVICE"
	join := call(bpf.SetSockOpt)
	join.Group, join.GroupSource, join.Option = netip.MustParseAddr("232.1.2.3"), netip.MustParseAddr("203.0.113.7"), "MCAST_JOIN_SOURCE_GROUP"
	for _, c := range []struct {
		name string
		call *decision.Call
	}{{"xdp socket", xdp}, {"pktinfo pin", pin}, {"SO_BINDTODEVICE", pinOpt}, {"join", join}} {
		if a := f.g.Decide(c.call); a.Allowed() || a.Errno() != unix.EPERM {
			t.Errorf("%s: %+v, want EPERM", c.name, a)
		}
	}
	recs := f.records(t)
	if len(recs) != 4 {
		t.Fatalf("%d records, want 4: %+v", len(recs), recs)
	}
	checks := []struct {
		family, class, dest, reason string
	}{
		{"xdp", "other-family", "", "only unix, inet, inet6 and netlink"},
		{"", "interface-pin", "", "interface other than lo (ifindex 2)"},
		{"", "interface-pin", "", `SO_BINDTODEVICE "eth0"`},
		{"inet", "multicast", "232.1.2.3", "source 203.0.113.7"},
	}
	for i, want := range checks {
		r := recs[i]
		if r.Family != want.family || r.Class != want.class || r.Dest != want.dest ||
			!strings.Contains(r.Reason, want.reason) || r.Decision != "denied" || r.Errno != "EPERM" {
			t.Errorf("record %d: %+v, want %+v", i, r, want)
		}
	}
	lines := f.msgs.String()
	for _, want := range []string{
		"Outbound network blocked: socket xdp by pid",
		"Outbound network blocked: sendmsg",
		"Outbound network blocked: setsockopt 232.1.2.3 (multicast) by pid",
		"--allow 232.1.2.3",
	} {
		if !strings.Contains(lines, want) {
			t.Errorf("messages lack %q:\n%s", want, lines)
		}
	}
}

// A join of a group an --allow rule covers passes, audited; a pin to lo
// or to no interface is nothing to decide.
func TestAllowedJoinAndLoopbackPin(t *testing.T) {
	f := newFixture(t, policy.Policy{Rules: []policy.Rule{{Prefix: netip.MustParsePrefix("224.0.0.251/32"), Port: 5353}}})
	join := call(bpf.SetSockOpt)
	join.Group, join.Option = netip.MustParseAddr("224.0.0.251"), "IP_ADD_MEMBERSHIP"
	if a := f.g.Decide(join); !a.Allowed() {
		t.Errorf("covered join denied: %+v", a)
	}
	lo := call(bpf.SetSockOpt)
	lo.Option = "SO_BINDTODEVICE"
	if a := f.g.Decide(lo); !a.Allowed() {
		t.Errorf("pin to lo denied: %+v", a)
	}
	recs := f.records(t)
	if len(recs) != 1 || recs[0].Decision != "allowed" || !strings.Contains(recs[0].Reason, "--allow 224.0.0.251") {
		t.Errorf("records %+v, want one allowed join", recs)
	}
}

// A netns ioctl and an address-rewriting BPF attach are denied, recorded
// with their classes and named in the line; a harmless attach type passes
// unrecorded; a netlink socket is handed over without capabilities in
// enforce mode and created by the target in audit mode. (A Call built
// here acts on the starting namespace unless OtherNetns says otherwise.)
func TestNetnsKindsDeniedAndRecorded(t *testing.T) {
	f := newFixture(t, policy.Policy{Rules: []policy.Rule{{Prefix: netip.MustParsePrefix("0.0.0.0/0")}}})
	route := call(bpf.Ioctl)
	route.Request = "SIOCADDRT"
	connect4 := call(bpf.BPF)
	connect4.Request, connect4.AttachType = "BPF_LINK_CREATE", unix.BPF_CGROUP_INET4_CONNECT
	ingress := call(bpf.BPF)
	ingress.Request, ingress.AttachType = "BPF_PROG_ATTACH", unix.BPF_CGROUP_INET_INGRESS
	for _, c := range []*decision.Call{route, connect4} {
		if a := f.g.Decide(c); a.Allowed() || a.Errno() != unix.EPERM {
			t.Errorf("%s: %+v, want EPERM", c.Syscall.Name, a)
		}
	}
	if a := f.g.Decide(ingress); !a.Allowed() {
		t.Errorf("BPF_CGROUP_INET_INGRESS attach: %+v, want allowed", a)
	}
	nl := call(bpf.Socket)
	nl.Socket = decision.SocketArgs{Domain: unix.AF_NETLINK, Type: unix.SOCK_RAW, Protocol: unix.NETLINK_ROUTE}
	if a := f.g.Decide(nl); !a.Allowed() || !a.Capless() {
		t.Errorf("netlink socket: %+v, want allowed and capless", a)
	}
	recs := f.records(t)
	if len(recs) != 2 {
		t.Fatalf("%d records, want 2: %+v", len(recs), recs)
	}
	for i, want := range []struct{ class, reason string }{
		{"netns-change", "ioctl SIOCADDRT"},
		{"bpf-attach", "BPF_LINK_CREATE BPF_CGROUP_INET4_CONNECT"},
	} {
		if r := recs[i]; r.Class != want.class || !strings.Contains(r.Reason, want.reason) || r.Decision != "denied" {
			t.Errorf("record %d: %+v, want %+v", i, r, want)
		}
	}
	for _, want := range []string{"blocked: ioctl by pid", "(ioctl SIOCADDRT)", "blocked: bpf by pid"} {
		if !strings.Contains(f.msgs.String(), want) {
			t.Errorf("messages lack %q:\n%s", want, f.msgs.String())
		}
	}

	audit := newFixture(t, policy.Policy{Mode: policy.Audit})
	if a := audit.g.Decide(nl); !a.Allowed() || a.Capless() {
		t.Errorf("netlink socket in audit mode: %+v, want a plain allow", a)
	}
	if a := audit.g.Decide(route); !a.Allowed() {
		t.Errorf("ioctl in audit mode: %+v, want allowed", a)
	}
	if recs := audit.records(t); len(recs) != 1 || recs[0].Decision != "would-deny" || recs[0].Class != "netns-change" {
		t.Errorf("audit mode records %+v, want one would-deny netns-change", recs)
	}
}

// What acts on a namespace the test made for itself (OtherNetns) changes
// nothing nettrap guards: the ioctl, the netfilter setsockopt, the netlink
// socket and a netns-bound attach (tcx) pass unrecorded, and the netlink
// socket is the target's own; in the starting namespace the same calls
// are denied.
func TestOtherNetnsIsHarmless(t *testing.T) {
	f := newFixture(t, policy.Policy{})
	route := call(bpf.Ioctl)
	route.Request = "SIOCADDRT"
	nf := call(bpf.SetSockOpt)
	nf.Netfilter, nf.Option = true, "IPT_SO_SET_REPLACE"
	tcx := call(bpf.BPF)
	tcx.Request, tcx.AttachType = "BPF_LINK_CREATE", unix.BPF_TCX_EGRESS
	for _, c := range []*decision.Call{route, nf, tcx} {
		if a := f.g.Decide(c); a.Allowed() || a.Errno() != unix.EPERM {
			t.Errorf("%s in the starting namespace: %+v, want EPERM", c.Syscall.Name, a)
		}
		c.OtherNetns = true
		if a := f.g.Decide(c); !a.Allowed() {
			t.Errorf("%s in another namespace: %+v, want allowed", c.Syscall.Name, a)
		}
	}
	nl := call(bpf.Socket)
	nl.Socket = decision.SocketArgs{Domain: unix.AF_NETLINK, Type: unix.SOCK_RAW}
	nl.OtherNetns = true
	if a := f.g.Decide(nl); !a.Allowed() || a.Capless() {
		t.Errorf("netlink socket in another namespace: %+v, want a plain allow", a)
	}
	if recs := f.records(t); len(recs) != 3 {
		t.Errorf("%d records, want the 3 denials only: %+v", len(recs), recs)
	}
}

// A netlink send that names the kernel on a socket of the starting
// namespace is made without capabilities; one that asks for a change
// is denied and names the request.
func TestNetlinkSend(t *testing.T) {
	f := newFixture(t, policy.Policy{})
	get := call(bpf.SendTo, classify.Dest{Family: unix.AF_NETLINK})
	get.NetlinkOurs = true
	if a := f.g.Decide(get); !a.Allowed() || !a.Capless() {
		t.Errorf("netlink read request: %+v, want allowed and capless", a)
	}
	add := call(bpf.SendMsg, classify.Dest{Family: unix.AF_NETLINK})
	add.NetlinkOurs, add.NetlinkChange = true, "RTM_NEWROUTE"
	if a := f.g.Decide(add); a.Allowed() {
		t.Errorf("netlink RTM_NEWROUTE: %+v, want denied", a)
	}
	recs := f.records(t)
	if len(recs) != 1 || recs[0].Class != "netns-change" || !strings.Contains(recs[0].Reason, "netlink RTM_NEWROUTE") {
		t.Errorf("records %+v, want one netns-change naming RTM_NEWROUTE", recs)
	}
}
