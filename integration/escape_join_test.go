package integration

import (
	"net"
	"net/netip"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/integration/internal/harness"
	"github.com/nettrap/nettrap/integration/internal/lab"
)

// joinSentinel joins group from inside (unconfined) and waits for its
// report on the veth: reports leave in the order of the joins and leaves
// the kernel queued, so a report of the confined program's group would
// come first.
func joinSentinel(t *testing.T, e labEnv, group netip.Addr) lab.Record {
	t.Helper()
	fam, level, name := unix.AF_INET, unix.IPPROTO_IP, unix.IP_ADD_MEMBERSHIP
	val := make([]byte, 12) // struct ip_mreqn, any interface
	if group.Is6() {
		fam, level, name = unix.AF_INET6, unix.IPPROTO_IPV6, unix.IPV6_JOIN_GROUP
		val = make([]byte, 20) // struct ipv6_mreq, any interface
	}
	g := group.AsSlice()
	copy(val, g)
	var fd int
	err := e.Inside(func() (err error) {
		if fd, err = unix.Socket(fam, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0); err != nil {
			return err
		}
		return unix.SetsockoptString(fd, level, name, string(val))
	})
	if fd > 0 {
		defer unix.Close(fd)
	}
	if err != nil {
		t.Fatalf("sentinel join %s: %v", group, err)
	}
	return waitFrame(t, e, "the sentinel report for "+group.String(), reportOf(group))
}

func reportOf(group netip.Addr) func(lab.Record) bool {
	ip := net.IP(group.AsSlice())
	return func(r lab.Record) bool { return lab.IsGroupReport(r, ip) }
}

// TestEscapeMulticastJoin: a join is a setsockopt, not a send, yet the
// kernel announces the group (and the source, for source-specific joins)
// with IGMP or MLD reports on the segment: a covert channel, and the start
// of receiving that group's traffic. Unprivileged. Under nettrap the join
// fails with EPERM, is audited as multicast with the group as destination,
// and no report leaves; an --allow rule covering the group opens it.
func TestEscapeMulticastJoin(t *testing.T) {
	lab.OuterDenies(t, "multicast joins off lo")
	e := newLabEnv(t)
	u := harness.Unprivileged()
	src4, src6 := lab.Outside4.String(), lab.Outside6.String()
	cases := []struct {
		option      string
		group, from string // from: the source of a source-specific join
	}{
		{"ip-add-membership", "239.77.0.1", ""},
		{"ip-add-source-membership", "232.77.0.2", src4},
		{"mcast-join-group", "239.77.0.3", ""},
		{"mcast-join-source-group", "232.77.0.4", src4},
		{"ipv6-join-group", "ff15::77:5", ""},
		{"mcast-join-group", "ff15::77:6", ""},
		{"mcast-join-source-group", "ff35::77:7", src6},
	}
	for i, c := range cases {
		t.Run(c.option+" "+c.group, func(t *testing.T) {
			args := func(group netip.Addr) []string {
				a := []string{e.bins.Escapee, "join", c.option, group.String()}
				if c.from != "" {
					a = append(a, c.from)
				}
				return a
			}
			unguarded := netip.MustParseAddr(c.group)
			mustEscape(t, e.run(t, u, args(unguarded)...))
			waitFrame(t, e, "the unguarded join's report", reportOf(unguarded))

			// Each step its own group, so that no report of an earlier
			// step can be taken for one of this step.
			guarded := shiftGroup(unguarded, 0x100)
			r := e.guarded(t, u, nil, args(guarded)...)
			mustBeDenied(t, r, "EPERM", "setsockopt "+guarded.String()+" (multicast)", "multicast")
			sentinel := shiftGroup(unguarded, 0x200+i)
			s := joinSentinel(t, e, sentinel)
			for _, f := range e.Frames() {
				if f.Seq <= s.Seq && reportOf(guarded)(f) {
					t.Errorf("LEAK under nettrap: %s", f)
				}
			}

			if c.option != "ip-add-source-membership" { // it takes an address, not an index
				// On lo the join is announced on lo only: it passes.
				onLo := shiftGroup(unguarded, 0x400)
				r = e.guarded(t, u, nil, append([]string{e.bins.Escapee, "join-lo"}, args(onLo)[2:]...)...)
				if o := parseEscapee(t, r); !o.OK || len(harness.BlockedLines(r.stderr)) != 0 {
					t.Errorf("join of %s on lo: %+v\nstderr: %s", onLo, o, r.stderr)
				}
				s := joinSentinel(t, e, shiftGroup(unguarded, 0x500+i))
				for _, f := range e.Frames() {
					if f.Seq <= s.Seq && reportOf(onLo)(f) {
						t.Errorf("a join on lo was reported on the veth: %s", f)
					}
				}
			}

			allowed := shiftGroup(unguarded, 0x300)
			r = e.guarded(t, u, []string{"--allow", allowed.String()}, args(allowed)...)
			if o := parseEscapee(t, r); !o.OK {
				t.Errorf("join of %s with --allow %s: %+v\nstderr: %s", allowed, allowed, o, r.stderr)
			}
			waitFrame(t, e, "the allowed join's report", reportOf(allowed))
		})
	}
}

// shiftGroup adds n to the last bytes of a group address.
func shiftGroup(a netip.Addr, n int) netip.Addr {
	b := a.AsSlice()
	i := len(b) - 1
	for v := n; v > 0 && i >= 0; i-- {
		v += int(b[i])
		b[i] = byte(v)
		v >>= 8
	}
	out, _ := netip.AddrFromSlice(b)
	return out
}
