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
