package integration

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/nftables"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/integration/internal/harness"
	"github.com/nettrap/nettrap/integration/internal/lab"
)

// The cases of changing the network namespace nettrap started in (the
// lab's inside): each first shows the change sends an allowed connect to
// 127.0.0.2:80 (or anything) elsewhere, unguarded, as root; then that
// nettrap refuses it and nothing arrives.

// escapeeNATTable is the nftables table the escapee's dnat op adds.
const escapeeNATTable = "nettrap_escapee"

// needNetAdmin skips t unless the tests run as root: only CAP_NET_ADMIN
// can change a namespace, so without it there is no leak to show.
func needNetAdmin(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("not root: changing a network namespace needs CAP_NET_ADMIN, so there is nothing to refuse")
	}
}

// redirectEnv is a lab with a listener at 203.0.113.7:80 and
// route_localnet on inside (a packet from 127.0.0.1 that a rule sends
// to another interface is otherwise dropped as martian).
func redirectEnv(t *testing.T) (labEnv, *lab.Listener) {
	t.Helper()
	needNetAdmin(t)
	e := newLabEnv(t)
	ln := e.ListenTCP(t, netip.AddrPortFrom(lab.Outside4, 80))
	err := e.Inside(func() error {
		for _, k := range []string{"all", "default", lab.InsideLink} {
			p := "/proc/sys/net/ipv4/conf/" + k + "/route_localnet"
			if err := os.WriteFile(p, []byte("1"), 0o644); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("route_localnet: %v", err)
	}
	return e, ln
}

// noConnectionAfter fails t if any connection reached ln after record
// mark and before a sentinel connection the test makes now.
func noConnectionAfter(t *testing.T, e labEnv, ln *lab.Listener, mark int, what string) {
	t.Helper()
	noRecordAfter(t, e, ln, "tcp", mark, what)
}

// lastSeq is the mark before a guarded run: the sequence number of a
// sentinel sent from inside now and recorded. Whatever an earlier run left
// queued at ln (datagrams in its receive buffer, connections in its accept
// queue) is recorded before the sentinel, so it cannot pass for a leak of
// the next run. A datagram sentinel is sent again until one arrives: a
// receive buffer still full from an earlier flood drops it.
func lastSeq(t *testing.T, e labEnv, ln *lab.Listener) int {
	t.Helper()
	sentinel := fmt.Sprintf("mark %d", time.Now().UnixNano())
	deadline := time.Now().Add(waitTimeout)
	for {
		c, err := e.Dial(ln.Network, ln.Addr)
		if err != nil {
			t.Fatalf("mark: %v", err)
		}
		_, err = c.Write([]byte(sentinel))
		c.Close()
		if err != nil {
			t.Fatalf("mark: %v", err)
		}
		if r, ok := ln.WaitFor(containing(sentinel), 500*time.Millisecond); ok {
			return r.Seq
		}
		if time.Now().After(deadline) {
			t.Fatalf("the mark never arrived at %s:\n%s", ln.Addr, ln.Dump())
		}
	}
}

// natTables lists the ip-family nftables tables inside, as the test
// process sees them.
func natTables(t *testing.T, e labEnv) []string {
	t.Helper()
	var names []string
	err := e.Inside(func() error {
		c, err := nftables.New()
		if err != nil {
			return err
		}
		tables, err := c.ListTablesOfFamily(nftables.TableFamilyIPv4)
		for _, tb := range tables {
			names = append(names, tb.Name)
		}
		return err
	})
	if err != nil {
		t.Fatalf("list nftables tables inside: %v", err)
	}
	return names
}

func dropNATTable(t *testing.T, e labEnv) {
	t.Helper()
	err := e.Inside(func() error {
		c, err := nftables.New()
		if err != nil {
			return err
		}
		c.DelTable(&nftables.Table{Family: nftables.TableFamilyIPv4, Name: escapeeNATTable})
		return c.Flush()
	})
	if err != nil {
		t.Fatalf("delete table %s: %v", escapeeNATTable, err)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// TestEscapeNetnsDNAT: an nftables DNAT rule added over netlink sends an
// allowed connect to 127.0.0.2:80 to 203.0.113.7. Under nettrap the rule
// is refused (EPERM), audited as netns-change, the ruleset is unchanged
// and nothing arrives.
func TestEscapeNetnsDNAT(t *testing.T) {
	e, ln := redirectEnv(t)
	marker := "dnat unguarded"
	mustEscape(t, e.run(t, harness.AsSelf, e.bins.Escapee, "dnat", marker))
	waitRecord(t, ln, "the DNATed connect", containing(marker))
	if !contains(natTables(t, e), escapeeNATTable) {
		t.Fatalf("unguarded: table %s missing after the rule went in", escapeeNATTable)
	}
	dropNATTable(t, e)

	mark := lastSeq(t, e, ln)
	r := e.guarded(t, harness.AsSelf, nil, e.bins.Escapee, "dnat", "dnat guarded")
	if lab.TestVariant(t) == lab.VariantKernel {
		// The kernel engine leaves sendmsg to the kernel: the request
		// goes out on the socket nettrap made without capabilities,
		// and the kernel refuses it, unrecorded (docs/engines.md).
		mustFailWith(t, r, "EPERM")
	} else {
		mustBeDenied(t, r, "EPERM", "netlink nfnetlink", "netns-change")
	}
	if got := natTables(t, e); contains(got, escapeeNATTable) {
		t.Errorf("under nettrap the table %s went in: %v", escapeeNATTable, got)
	}
	noConnectionAfter(t, e, ln, mark, "the guarded DNAT")
}

// TestEscapeNetnsIptablesLegacy: the legacy iptables nat table, written
// with setsockopt(IPT_SO_SET_REPLACE) on an ordinary UDP socket (no raw
// socket needed), sends an allowed connect to 127.0.0.2:80 to
// 203.0.113.7. Under nettrap with --userns=off the option is refused
// (EPERM, audited as netns-change); by default (root in a user namespace
// of its own) the kernel refuses already (EPERM, at IPT_SO_GET_INFO).
// Either way the table stays empty and nothing arrives.
func TestEscapeNetnsIptablesLegacy(t *testing.T) {
	e, ln := redirectEnv(t)
	marker := "iptables unguarded"
	r := e.run(t, harness.AsSelf, e.bins.Escapee, "ipt-dnat", lab.InsideLink, marker)
	if o := parseEscapee(t, r); !o.OK && strings.Contains(o.Err, "IPT_SO_GET_INFO") {
		skipOrFail(t, "no legacy iptables nat table in this kernel: "+o.Err)
	}
	mustEscape(t, r)
	waitRecord(t, ln, "the DNATed connect", containing(marker))
	mustEscape(t, e.run(t, harness.AsSelf, e.bins.Escapee, "ipt-flush"))

	for _, userns := range []string{"off", "auto"} {
		t.Run("userns="+userns, func(t *testing.T) {
			mark := lastSeq(t, e, ln)
			r = e.guarded(t, harness.AsSelf, []string{"--userns=" + userns}, e.bins.Escapee, "ipt-dnat", lab.InsideLink, "iptables guarded "+userns)
			if userns == "off" {
				mustBeDenied(t, r, "EPERM", "setsockopt IPT_SO_SET_REPLACE", "netns-change")
			} else {
				mustFailWith(t, r, "EPERM")
			}
			if o := parseEscapee(t, e.run(t, harness.AsSelf, e.bins.Escapee, "ipt-empty")); !o.OK {
				t.Errorf("under nettrap the nat table changed: %s", o.Err)
				e.run(t, harness.AsSelf, e.bins.Escapee, "ipt-flush")
			}
			noConnectionAfter(t, e, ln, mark, "the guarded iptables DNAT (--userns="+userns+")")
		})
	}
}

// routeTo198 is the route the route cases add: TEST-NET-2 via the
// outside's end of the veth.
var routeTo198 = netip.MustParsePrefix("198.51.100.0/24")

func hasRoute(t *testing.T, e labEnv, p netip.Prefix) bool {
	t.Helper()
	found := false
	err := e.Inside(func() error {
		routes, err := netlink.RouteList(nil, unix.AF_INET)
		for _, r := range routes {
			if r.Dst != nil && r.Dst.String() == p.String() {
				found = true
			}
		}
		return err
	})
	if err != nil {
		t.Fatalf("list routes inside: %v", err)
	}
	return found
}

func delRoute(t *testing.T, e labEnv, p netip.Prefix) {
	t.Helper()
	err := e.Inside(func() error {
		dst := &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
		return netlink.RouteDel(&netlink.Route{Dst: dst})
	})
	if err != nil {
		t.Fatalf("delete route %s inside: %v", p, err)
	}
}

// TestEscapeNetnsRoute: a route added over rtnetlink (with write(2), and
// with sendto naming the kernel, as most libraries do) or with the legacy
// SIOCADDRT ioctl (also on a socket of the starting namespace from a
// thread that moved to another) exists unguarded; under nettrap it is refused with
// EPERM and does not exist. The addressed netlink request and the ioctl
// are audited as netns-change; the write(2) one is refused by the kernel
// itself (the socket carries no capability) and cannot be audited.
func TestEscapeNetnsRoute(t *testing.T) {
	needNetAdmin(t)
	e := newLabEnv(t)
	gw := "10.211.0.1"
	cases := []struct {
		name  string
		args  []string
		line  string // "" when nettrap cannot see the request
		errno string
	}{
		{"rtnetlink write", []string{"route-nl", routeTo198.String(), gw, "write"}, "", "EPERM"},
		{"rtnetlink sendto", []string{"route-nl", routeTo198.String(), gw, "sendto"}, "netlink RTM_NEWROUTE", "EPERM"},
		// A netlink socket acts on the namespace it was made in.
		{"rtnetlink write from another namespace", []string{"route-nl-away", routeTo198.String(), gw, "write"}, "", "EPERM"},
		{"rtnetlink sendto from another namespace", []string{"route-nl-away", routeTo198.String(), gw, "sendto"}, "netlink RTM_NEWROUTE", "EPERM"},
		{"SIOCADDRT", []string{"route-ioctl", routeTo198.String(), gw}, "ioctl SIOCADDRT", "EPERM"},
		// The ioctl acts on the socket's namespace: a thread that moved
		// to a namespace of its own still reaches the starting one.
		{"SIOCADDRT from another namespace", []string{"route-ioctl-away", routeTo198.String(), gw}, "ioctl SIOCADDRT", "EPERM"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			argv := append([]string{e.bins.Escapee}, c.args...)
			mustEscape(t, e.run(t, harness.AsSelf, argv...))
			if !hasRoute(t, e, routeTo198) {
				t.Fatalf("unguarded: no route to %s after it was added", routeTo198)
			}
			delRoute(t, e, routeTo198)

			r := e.guarded(t, harness.AsSelf, nil, argv...)
			if c.line != "" {
				mustBeDenied(t, r, c.errno, c.line, "netns-change")
			} else if o := parseEscapee(t, r); o.OK || o.Errno != c.errno {
				t.Errorf("under nettrap: ok=%v errno=%q err=%q, want %s\nstderr: %s", o.OK, o.Errno, o.Err, c.errno, r.stderr)
			}
			if hasRoute(t, e, routeTo198) {
				delRoute(t, e, routeTo198)
				t.Errorf("LEAK under nettrap: the route to %s went in", routeTo198)
			}
		})
	}
}

// TestEscapeNetnsCgroupConnect: a cgroup connect4 BPF program, attached
// to a fresh cgroup the escapee makes for itself alone, rewrites a
// connect to 127.0.0.2:80 into one to 203.0.113.7:80. Under nettrap with
// --userns=off the attach is refused (EPERM, audited as bpf-attach); by
// default (root in a user namespace of its own) the kernel refuses to
// load the program already (EPERM: loading it needs CAP_BPF and
// CAP_NET_ADMIN in the initial user namespace). Nothing arrives.
func TestEscapeNetnsCgroupConnect(t *testing.T) {
	lab.OuterUserns(t, "loading a cgroup BPF program (CAP_BPF, CAP_NET_ADMIN)")
	e, ln := redirectEnv(t)
	marker := "cgroup connect unguarded"
	r := e.run(t, harness.AsSelf, e.bins.Escapee, "cgroup-connect", marker)
	if o := parseEscapee(t, r); !o.OK && (strings.HasPrefix(o.Err, "cgroup:") || strings.HasPrefix(o.Err, "load:")) {
		skipOrFail(t, "cgroup v2 or BPF unavailable: "+o.Err)
	}
	mustEscape(t, r)
	waitRecord(t, ln, "the rewritten connect", containing(marker))

	for _, userns := range []string{"off", "auto"} {
		t.Run("userns="+userns, func(t *testing.T) {
			mark := lastSeq(t, e, ln)
			r := e.guarded(t, harness.AsSelf, []string{"--userns=" + userns}, e.bins.Escapee, "cgroup-connect", "cgroup connect guarded "+userns)
			if userns == "off" {
				mustBeDenied(t, r, "EPERM", "BPF_CGROUP_INET4_CONNECT", "bpf-attach")
			} else if o := parseEscapee(t, r); o.OK || o.Errno != "EPERM" || !strings.HasPrefix(o.Err, "load:") {
				t.Errorf("under nettrap: ok=%v errno=%q err=%q, want EPERM at load\nstderr: %s", o.OK, o.Errno, o.Err, r.stderr)
			}
			noConnectionAfter(t, e, ln, mark, "the guarded cgroup connect (--userns="+userns+")")
		})
	}
	if left, _ := filepath.Glob(filepath.Join(ownCgroup2(t), "nettrap-escapee-*")); len(left) > 0 {
		t.Errorf("cgroups left behind: %v", left)
	}
}

// ownCgroup2 is the directory of the test process's cgroup v2, where the
// escapee (which inherits it) makes its own child.
func ownCgroup2(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	rel := ""
	for _, line := range strings.Split(string(b), "\n") {
		if r, ok := strings.CutPrefix(line, "0::"); ok {
			rel = r
		}
	}
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(mi), "\n") {
		pre, post, _ := strings.Cut(line, " - ")
		if f, p := strings.Fields(post), strings.Fields(pre); len(f) > 0 && f[0] == "cgroup2" && len(p) > 4 {
			return filepath.Join(p[4], rel)
		}
	}
	t.Fatal("cgroup2 is not mounted")
	return ""
}

// skipOrFail skips t with reason, or fails it when CI=true.
func skipOrFail(t *testing.T, reason string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s (CI=true, so this is fatal)", reason)
	}
	t.Skip(reason)
}

// TestNetnsReadOnlyNetlink: reading the namespace over netlink
// (net.Interfaces, an RTM_GETROUTE dump) keeps working under nettrap, as
// root (whose socket is handed over without capabilities) and as nobody.
func TestNetnsReadOnlyNetlink(t *testing.T) {
	e := newLabEnv(t)
	users := []harness.User{harness.Unprivileged()}
	if os.Geteuid() == 0 {
		users = []harness.User{harness.AsSelf, harness.AsNobody}
	}
	harness.ForUsers(t, users, func(t *testing.T, u harness.User) {
		r := e.guarded(t, u, nil, e.bins.Escapee, "read-nl")
		if o := parseEscapee(t, r); !o.OK {
			t.Errorf("read-only netlink under nettrap failed (errno %s): %s\nstderr: %s", o.Errno, o.Err, r.stderr)
		}
		if lines := harness.BlockedLines(r.stderr); len(lines) > 0 {
			t.Errorf("reads were blocked: %q", lines)
		}
	})
}

// TestNetnsOwnNamespace: a namespace the confined program makes for
// itself is its own: routes added there (over rtnetlink both ways, and
// SIOCADDRT) work under nettrap.
func TestNetnsOwnNamespace(t *testing.T) {
	needNetAdmin(t)
	e := newLabEnv(t)
	for _, how := range []string{"write", "sendto"} {
		t.Run(how, func(t *testing.T) {
			r := e.guarded(t, harness.AsSelf, nil, e.bins.Escapee, "own-netns-route", how)
			if o := parseEscapee(t, r); !o.OK {
				t.Errorf("route in its own namespace under nettrap failed (errno %s): %s\nstderr: %s", o.Errno, o.Err, r.stderr)
			}
			if lines := harness.BlockedLines(r.stderr); len(lines) > 0 {
				t.Errorf("blocked in its own namespace: %q", lines)
			}
		})
	}
}

// TestEscapeI386NetnsIoctl: a route added with an i386 SIOCADDRT (on a
// socket the 64-bit escapee made: 32-bit sockets are denied) exists
// unguarded; under nettrap the 32-bit ioctl is refused like every foreign
// trap, and the route does not exist.
func TestEscapeI386NetnsIoctl(t *testing.T) {
	needNetAdmin(t)
	e := newLabEnv(t)
	e.bins.Need32(t)
	argv := []string{e.bins.Escapee, "udp-after", "127.0.0.1:9", "after route",
		e.bins.Escape32, "route", "3", routeTo198.String(), "10.211.0.1"}
	r := e.run(t, harness.AsSelf, argv...)
	if child, _, _ := strings.Cut(r.stdout, "\n"); child != "ok" {
		t.Fatalf("unguarded i386 SIOCADDRT: %q\nstderr: %s", r.stdout, r.stderr)
	}
	if !hasRoute(t, e, routeTo198) {
		t.Fatalf("unguarded: no route to %s after the i386 SIOCADDRT", routeTo198)
	}
	delRoute(t, e, routeTo198)

	r = e.guarded(t, harness.AsSelf, nil, argv...)
	if child, _, _ := strings.Cut(r.stdout, "\n"); child != "EPERM ioctl(SIOCADDRT)" {
		t.Errorf("i386 SIOCADDRT under nettrap: %q, want EPERM\nstderr: %s", r.stdout, r.stderr)
	}
	found := false
	for _, l := range harness.BlockedLines(r.stderr) {
		found = found || strings.Contains(l, "ioctl (i386 ABI)")
	}
	if !found {
		t.Errorf("no blocked line for the i386 ioctl:\n%s", r.stderr)
	}
	if hasRoute(t, e, routeTo198) {
		delRoute(t, e, routeTo198)
		t.Errorf("LEAK under nettrap: the i386 SIOCADDRT route went in")
	}
}

// TestI386OrdinaryIoctlPasses: a 32-bit ioctl outside the trapped
// requests (SIOCGIFINDEX) stays in the kernel under nettrap.
func TestI386OrdinaryIoctlPasses(t *testing.T) {
	e := newLabEnv(t)
	e.bins.Need32(t)
	r := e.guarded(t, harness.Unprivileged(), nil, e.bins.Escapee, "udp-after", "127.0.0.1:9", "after ifindex",
		e.bins.Escape32, "ifindex", "3", "lo")
	child, rest, _ := strings.Cut(r.stdout, "\n")
	if child != "ok" || !strings.Contains(rest, `"ok":true`) || len(harness.BlockedLines(r.stderr)) != 0 {
		t.Errorf("i386 SIOCGIFINDEX under nettrap: %q\nstderr: %s", r.stdout, r.stderr)
	}
}

// TestNetnsOwnNamespaceSealed: under --sealed a netns ioctl is denied even
// in the program's own namespace (the descriptor it names could be
// swapped for a socket of the starting namespace before the kernel acts),
// while netlink there, decided without reading memory, still works.
func TestNetnsOwnNamespaceSealed(t *testing.T) {
	needNetAdmin(t)
	e := newLabEnv(t)
	r := e.guarded(t, harness.AsSelf, []string{"--sealed"}, e.bins.Escapee, "own-netns-route", "write")
	mustBeDenied(t, r, "EPERM", "ioctl SIOCADDRT", "netns-change")
	if o := parseEscapee(t, r); !strings.Contains(o.Err, "SIOCADDRT") {
		t.Errorf("under --sealed the netlink route failed before the ioctl: %s", o.Err)
	}
}
