package integration

import (
	"fmt"
	"net/netip"
	"strconv"
	"testing"

	"github.com/nettrap/nettrap/integration/internal/harness"
	"github.com/nettrap/nettrap/integration/internal/lab"
)

// TestEscapeXDPSocket: an AF_XDP socket (CAP_NET_RAW, which root has under
// Docker's default capabilities) puts a UDP frame for the outside on the
// wire; its only send is sendto(fd, NULL, …), which names no destination.
// Under nettrap the socket is never created: EPERM, audited as
// other-family.
func TestEscapeXDPSocket(t *testing.T) {
	lab.RequireRoot(t)
	lab.OuterDenies(t, "socket(AF_XDP)")
	e := newLabEnv(t)
	dst := netip.AddrPortFrom(lab.Outside4, 4244)
	args := func(marker string) []string {
		return []string{e.bins.Escapee, "xdp", strconv.Itoa(e.InsideIndex), e.InsideMAC.String(),
			e.OutsideMAC.String(), e.InsideAddr4.String(), dst.String(), marker}
	}
	marker := "xdp frame unguarded"
	mustEscape(t, e.run(t, harness.AsSelf, args(marker)...))
	waitFrame(t, e, "the AF_XDP frame", containing(marker))

	marker = "xdp frame guarded"
	r := e.guarded(t, harness.AsSelf, nil, args(marker)...)
	mustBeDenied(t, r, "EPERM", "socket xdp", "other-family")
	sentinel := "sentinel after xdp"
	sendSentinelFrame(t, e, sentinel)
	noFrameBefore(t, e, containing(marker), containing(sentinel))
}

// TestEscapeOtherFamiliesDenied: every family but unix, inet, inet6 and
// netlink is refused at socket(2), whether or not the kernel has it (vsock
// leaves the network namespace: its peer is the hypervisor or another VM).
func TestEscapeOtherFamiliesDenied(t *testing.T) {
	e := newLabEnv(t)
	for _, fam := range []string{"vsock", "bluetooth", "can", "tipc", "alg", "rds", "kcm", "qipcrtr", "smc", "mctp"} {
		t.Run(fam, func(t *testing.T) {
			r := e.guarded(t, harness.Unprivileged(), nil, e.bins.Escapee, "socket", fam)
			mustBeDenied(t, r, "EPERM", fmt.Sprintf("socket %s", fam), "other-family")
		})
	}
}
