package lab

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// The addresses of the lab. The veth subnets are private addresses of no
// other use on this machine; the outside's own addresses are from the
// documentation ranges (RFC 5737, RFC 3849).
var (
	Outside4 = netip.MustParseAddr("203.0.113.7")
	Outside6 = netip.MustParseAddr("2001:db8:ff::7")

	insideVeth4  = netip.MustParsePrefix("10.211.0.2/24")
	outsideVeth4 = netip.MustParsePrefix("10.211.0.1/24")
	insideVeth6  = netip.MustParsePrefix("fd00:211::2/64")
	outsideVeth6 = netip.MustParsePrefix("fd00:211::1/64")
)

// Interface names, in their own namespaces.
const (
	InsideLink  = "nt-in"
	OutsideLink = "nt-out"
)

// Lab is the two namespaces and what the outside recorded.
type Lab struct {
	inside, outside netns.NsHandle
	// InsideIndex is the veth's interface index inside (never 1: lo is 1).
	InsideIndex int
	// InsideMAC and OutsideMAC are the veth ends' hardware addresses.
	InsideMAC, OutsideMAC net.HardwareAddr
	// InsideAddr4 is the inside's IPv4 address on the veth.
	InsideAddr4 netip.Addr

	capture *capture
}

// New builds the lab, or skips t (fails it when CI=true) when namespaces
// cannot be made here. Everything is torn down when t ends.
func New(t testing.TB) *Lab {
	t.Helper()
	l, err := build()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("lab: %v (CI=true, so this is fatal)", err)
		}
		t.Skipf("lab: %v", err)
	}
	t.Cleanup(l.close)
	if err := l.startCapture(); err != nil {
		t.Fatalf("lab: capture: %v", err)
	}
	if err := l.checkPath(); err != nil {
		t.Fatalf("lab: %v", err)
	}
	return l
}

// build's result is unnamed: its error returns set it to nil, and the
// deferred close must still see the half-built lab.
func build() (_ *Lab, err error) {
	l := &Lab{inside: -1, outside: -1, InsideAddr4: insideVeth4.Addr()}
	defer func() {
		if err != nil {
			l.close()
		}
	}()
	if l.inside, err = newNS(); err != nil {
		return nil, fmt.Errorf("new inside namespace: %w", err)
	}
	if l.outside, err = newNS(); err != nil {
		return nil, fmt.Errorf("new outside namespace: %w", err)
	}
	for _, ns := range []netns.NsHandle{l.inside, l.outside} {
		// No duplicate address detection: addresses (and the link-local
		// ones MLD reports come from) are usable at once.
		if err := InNS(ns, func() error {
			return sysctls(map[string]string{
				"net/ipv6/conf/all/accept_dad":     "0",
				"net/ipv6/conf/default/accept_dad": "0",
			})
		}); err != nil {
			return nil, err
		}
	}
	in, err := netlink.NewHandleAt(l.inside)
	if err != nil {
		return nil, fmt.Errorf("netlink inside: %w", err)
	}
	defer in.Close()
	out, err := netlink.NewHandleAt(l.outside)
	if err != nil {
		return nil, fmt.Errorf("netlink outside: %w", err)
	}
	defer out.Close()
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: InsideLink}, PeerName: OutsideLink,
		PeerNamespace: netlink.NsFd(l.outside)}
	if err := in.LinkAdd(veth); err != nil {
		return nil, fmt.Errorf("add veth: %w", err)
	}
	if err := l.setupInside(in); err != nil {
		return nil, err
	}
	if err := l.setupOutside(out); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *Lab) setupInside(h *netlink.Handle) error {
	lo, veth, err := links(h, InsideLink)
	if err != nil {
		return err
	}
	l.InsideIndex, l.InsideMAC = veth.Attrs().Index, veth.Attrs().HardwareAddr
	for _, a := range []netip.Prefix{insideVeth4, insideVeth6} {
		if err := addAddr(h, veth, a); err != nil {
			return err
		}
	}
	for _, up := range []netlink.Link{lo, veth} {
		if err := h.LinkSetUp(up); err != nil {
			return fmt.Errorf("inside: %s up: %w", up.Attrs().Name, err)
		}
	}
	for _, gw := range []netip.Addr{outsideVeth4.Addr(), outsideVeth6.Addr()} {
		r := &netlink.Route{LinkIndex: veth.Attrs().Index, Gw: gw.AsSlice()}
		if err := h.RouteAdd(r); err != nil {
			return fmt.Errorf("inside: default route via %s: %w", gw, err)
		}
	}
	return nil
}

func (l *Lab) setupOutside(h *netlink.Handle) error {
	lo, veth, err := links(h, OutsideLink)
	if err != nil {
		return err
	}
	l.OutsideMAC = veth.Attrs().HardwareAddr
	for _, a := range []netip.Prefix{outsideVeth4, outsideVeth6} {
		if err := addAddr(h, veth, a); err != nil {
			return err
		}
	}
	for _, a := range []netip.Addr{Outside4, Outside6} {
		if err := addAddr(h, lo, netip.PrefixFrom(a, a.BitLen())); err != nil {
			return err
		}
	}
	for _, up := range []netlink.Link{lo, veth} {
		if err := h.LinkSetUp(up); err != nil {
			return fmt.Errorf("outside: %s up: %w", up.Attrs().Name, err)
		}
	}
	return nil
}

func links(h *netlink.Handle, vethName string) (lo, veth netlink.Link, err error) {
	if lo, err = h.LinkByName("lo"); err != nil {
		return nil, nil, fmt.Errorf("find lo: %w", err)
	}
	if veth, err = h.LinkByName(vethName); err != nil {
		return nil, nil, fmt.Errorf("find %s: %w", vethName, err)
	}
	return lo, veth, nil
}

func addAddr(h *netlink.Handle, link netlink.Link, p netip.Prefix) error {
	a := &netlink.Addr{IPNet: &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}}
	if p.Addr().Is6() {
		a.Flags = unix.IFA_F_NODAD
	}
	if err := h.AddrAdd(link, a); err != nil {
		return fmt.Errorf("add %s to %s: %w", p, link.Attrs().Name, err)
	}
	return nil
}

func (l *Lab) close() {
	if l.capture != nil {
		l.capture.close()
	}
	for _, ns := range []netns.NsHandle{l.inside, l.outside} {
		if ns.IsOpen() {
			ns.Close()
		}
	}
}

// newNS makes a network namespace and returns a handle on it. The thread
// that made it dies with its goroutine (it is never unlocked).
func newNS() (netns.NsHandle, error) {
	type res struct {
		h   netns.NsHandle
		err error
	}
	ch := make(chan res, 1)
	go func() {
		runtime.LockOSThread()
		h, err := netns.New()
		ch <- res{h, err}
	}()
	r := <-ch
	return r.h, r.err
}

// InNS runs f on an OS thread that is in ns, and only there: the thread is
// never unlocked, so it dies with f's goroutine. Sockets f creates belong
// to ns and may be used from anywhere afterwards; processes f forks start
// in ns.
func InNS(ns netns.NsHandle, f func() error) error {
	ch := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := netns.Set(ns); err != nil {
			ch <- fmt.Errorf("enter namespace: %w", err)
			return
		}
		ch <- f()
	}()
	return <-ch
}

// Inside runs f in the inside namespace (see InNS).
func (l *Lab) Inside(f func() error) error { return InNS(l.inside, f) }

// Outside runs f in the outside namespace (see InNS).
func (l *Lab) Outside(f func() error) error { return InNS(l.outside, f) }

func sysctls(kv map[string]string) error {
	var errs []error
	for k, v := range kv {
		if err := os.WriteFile("/proc/sys/"+k, []byte(v), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("sysctl %s=%s: %w", k, v, err))
		}
	}
	return errors.Join(errs...)
}
