package kernel

import (
	"net/netip"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/cgroupbpf"
	"github.com/nettrap/nettrap/decision"
)

// TestVerdictOf: what the programs are told for each answer, and what a
// redirect's Done hears.
func TestVerdictOf(t *testing.T) {
	sink4, sink6 := netip.MustParseAddrPort("127.0.0.53:5353"), netip.MustParseAddrPort("[::1]:5353")
	send4 := cgroupbpf.Held{Dest: netip.MustParseAddrPort("192.0.2.1:53"), Nr: unix.SYS_SENDTO, Type: unix.SOCK_DGRAM,
		Source: netip.MustParseAddrPort("0.0.0.0:40000")}
	send6 := cgroupbpf.Held{Dest: netip.MustParseAddrPort("[2001:db8::1]:53"), Nr: unix.SYS_SENDMSG, Type: unix.SOCK_DGRAM,
		Source: netip.MustParseAddrPort("0.0.0.0:40001")}
	mapped := send6
	mapped.Dest = netip.MustParseAddrPort("[::ffff:192.0.2.1]:53")
	fastOpen := send4
	fastOpen.Nr, fastOpen.Type = unix.SYS_SENDTO, unix.SOCK_STREAM
	unbound := send4
	unbound.Source = netip.AddrPort{}
	for _, c := range []struct {
		name      string
		a         decision.Answer
		h         cgroupbpf.Held
		want      cgroupbpf.Verdict
		wantLocal string // "" no Done; "failed"; or the local address
	}{
		{"allow", decision.Allow(), send4, cgroupbpf.Allow(), ""},
		{"deny", decision.Deny(unix.ECONNREFUSED), send4, cgroupbpf.Deny(unix.ECONNREFUSED), ""},
		{"peers", decision.AllowPeers(&decision.PeerCheck{}), send4, cgroupbpf.Deny(unix.EPERM), ""},
		{"redirect v4", decision.DenyRedirect(unix.EPERM, &decision.Redirect{To4: sink4, To6: sink6}), send4,
			cgroupbpf.RedirectTo(sink4), "127.0.0.1:40000"},
		{"redirect v6", decision.DenyRedirect(unix.EPERM, &decision.Redirect{To4: sink4, To6: sink6}), send6,
			cgroupbpf.RedirectTo(sink6), "[::1]:40001"},
		{"redirect v4-mapped", decision.DenyRedirect(unix.EPERM, &decision.Redirect{To4: sink4, To6: sink6}), mapped,
			cgroupbpf.RedirectTo(netip.MustParseAddrPort("[::ffff:127.0.0.53]:5353")), "127.0.0.1:40001"},
		{"redirect, no v6 stand-in", decision.DenyRedirect(unix.EACCES, &decision.Redirect{To4: sink4}), send6,
			cgroupbpf.Deny(unix.EACCES), "failed"},
		{"redirect of a fast open", decision.DenyRedirect(unix.EPERM, &decision.Redirect{To4: sink4}), fastOpen,
			cgroupbpf.Deny(unix.EPERM), "failed"},
		{"redirect of an unbound socket", decision.DenyRedirect(unix.EPERM, &decision.Redirect{To4: sink4}), unbound,
			cgroupbpf.Deny(unix.EPERM), "failed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			heard := ""
			if r := c.a.Redirect(); r != nil {
				r.Done = func(local netip.AddrPort, ok bool) {
					heard = "failed"
					if ok {
						heard = local.String()
					}
				}
			}
			v, done := verdictOf(c.a, c.h)
			if v != c.want {
				t.Errorf("verdict %+v, want %+v", v, c.want)
			}
			if done != nil {
				done()
			}
			if heard != c.wantLocal {
				t.Errorf("Done heard %q, want %q", heard, c.wantLocal)
			}
		})
	}
}

// TestVerdictOfConnect: a redirected connect on a socket with no port
// yet is bound to a free one on loopback first (of the socket's family:
// v4-mapped on an IPv6 socket), the one Done tells the stand-in; a bound
// socket keeps its own; a unix connect is never redirected.
func TestVerdictOfConnect(t *testing.T) {
	sink4, sink6 := netip.MustParseAddrPort("127.0.0.53:5353"), netip.MustParseAddrPort("[::1]:5353")
	conn4 := cgroupbpf.Held{Dest: netip.MustParseAddrPort("192.0.2.1:53"), Nr: unix.SYS_CONNECT, Type: unix.SOCK_DGRAM}
	conn6 := cgroupbpf.Held{Dest: netip.MustParseAddrPort("[2001:db8::1]:53"), Nr: unix.SYS_CONNECT, Type: unix.SOCK_STREAM}
	mapped := conn6
	mapped.Dest = netip.MustParseAddrPort("[::ffff:192.0.2.1]:53")
	bound := conn4
	bound.Source = netip.MustParseAddrPort("0.0.0.0:40000")
	for _, c := range []struct {
		name     string
		h        cgroupbpf.Held
		to       netip.AddrPort
		local    string // the address Done hears, less a port nettrap picks ("" no port picked)
		fromAddr string // the source the program binds, less the port
	}{
		{"v4 unbound", conn4, sink4, "127.0.0.1", "127.0.0.1"},
		{"v6 unbound", conn6, sink6, "::1", "::1"},
		{"v4-mapped unbound", mapped, netip.MustParseAddrPort("[::ffff:127.0.0.53]:5353"), "127.0.0.1", "::ffff:127.0.0.1"},
		{"v4 bound", bound, sink4, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var heard netip.AddrPort
			a := decision.DenyRedirect(unix.EPERM, &decision.Redirect{To4: sink4, To6: sink6})
			a.Redirect().Done = func(local netip.AddrPort, ok bool) {
				if !ok {
					t.Error("Done heard a failure")
				}
				heard = local
			}
			v, done := verdictOf(a, c.h)
			if done == nil {
				t.Fatal("no Done")
			}
			done()
			if c.local == "" {
				if want := cgroupbpf.RedirectTo(c.to); v != want || heard.String() != "127.0.0.1:40000" {
					t.Errorf("verdict %+v, Done heard %v; want %+v, 127.0.0.1:40000", v, heard, want)
				}
				return
			}
			from := netip.AddrPortFrom(netip.MustParseAddr(c.fromAddr), heard.Port())
			if heard.Addr().String() != c.local || heard.Port() == 0 || v != cgroupbpf.RedirectFrom(c.to, from) {
				t.Errorf("verdict %+v, Done heard %v; want a redirect to %v bound to %v, a port picked", v, heard, c.to, from)
			}
		})
	}
	unixConn := cgroupbpf.Held{Unix: true, SunPath: "/run/nscd/socket", Nr: unix.SYS_CONNECT, Type: unix.SOCK_STREAM}
	failed := false
	a := decision.DenyRedirect(unix.EPERM, &decision.Redirect{To4: sink4, To6: sink6})
	a.Redirect().Done = func(_ netip.AddrPort, ok bool) { failed = !ok }
	v, done := verdictOf(a, unixConn)
	if done != nil {
		done()
	}
	if v != cgroupbpf.Deny(unix.EPERM) || !failed {
		t.Errorf("unix connect redirected: %+v (Done told of a failure: %v)", v, failed)
	}
}
