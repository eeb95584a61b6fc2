package sandbox

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// setup turns the fresh namespaces into the sandbox. It runs once, in the
// re-executed test binary, before any test.
func setup() (teardown func(), err error) {
	// Private first: otherwise the bind mount below would propagate to the
	// host's mount namespace through shared mount peers.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return nil, fmt.Errorf("make mounts private: %w", os.NewSyscallError("mount", err))
	}
	if err := setupLoopback(); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "ntharness-sandbox-")
	if err != nil {
		return nil, fmt.Errorf("resolv.conf dir: %w", err)
	}
	teardown = func() {
		_ = unix.Unmount("/etc/resolv.conf", unix.MNT_DETACH)
		_ = os.RemoveAll(dir)
	}
	if err := mountResolvConf(filepath.Join(dir, "resolv.conf")); err != nil {
		teardown()
		return nil, err
	}
	blackholeErr = setupBlackhole()
	if err := verify(); err != nil {
		teardown()
		return nil, err
	}
	return teardown, nil
}

func setupLoopback() error {
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("find lo: %w", err)
	}
	// lo has no IFF_MULTICAST by default; without it multicast sends to lo
	// are not looped back to listeners.
	if err := netlink.LinkSetMulticastOn(lo); err != nil {
		return fmt.Errorf("lo multicast on: %w", err)
	}
	if err := netlink.LinkSetUp(lo); err != nil {
		return fmt.Errorf("lo up: %w", err)
	}
	for _, a := range addrs {
		if err := addAddr(lo, a); err != nil {
			return err
		}
	}
	return addCastRoutes(lo)
}

func addAddr(lo netlink.Link, a netip.Addr) error {
	pfx := netip.PrefixFrom(a, a.BitLen())
	na := &netlink.Addr{IPNet: prefixNet(pfx)}
	if a.Is6() {
		// No duplicate address detection: the address is usable at once
		// instead of being "tentative" (EADDRNOTAVAIL) for a second or two.
		na.Flags = unix.IFA_F_NODAD
	}
	if err := netlink.AddrAdd(lo, na); err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("add %s to lo: %w", pfx, err)
	}
	return nil
}

// addCastRoutes sends multicast and limited broadcast into lo. Without these
// routes such sends fail with ENETUNREACH, and a guard that let them through
// would go unnoticed.
func addCastRoutes(lo netlink.Link) error {
	idx := lo.Attrs().Index
	routes := []*netlink.Route{
		{LinkIndex: idx, Dst: prefixNet(netip.MustParsePrefix("224.0.0.0/4")), Scope: netlink.SCOPE_LINK},
		{LinkIndex: idx, Dst: prefixNet(netip.MustParsePrefix("255.255.255.255/32")),
			Table: unix.RT_TABLE_LOCAL, Type: unix.RTN_BROADCAST, Scope: netlink.SCOPE_LINK},
		{LinkIndex: idx, Dst: prefixNet(netip.MustParsePrefix("ff00::/8")),
			Table: unix.RT_TABLE_LOCAL, Type: unix.RTN_MULTICAST},
	}
	for _, r := range routes {
		if err := netlink.RouteAdd(r); err != nil && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("route %s dev lo: %w", r.Dst, err)
		}
	}
	return nil
}

// setupBlackhole routes BlackholeAddr into lo without putting it on lo:
// the looped-back packets are not for this host and forwarding is off, so
// they are dropped without an answer — a connect neither succeeds nor gets
// refused. (A dummy link would do too, but needs a kernel module.)
func setupBlackhole() error {
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("find lo: %w", err)
	}
	r := &netlink.Route{LinkIndex: lo.Attrs().Index, Scope: netlink.SCOPE_LINK,
		Dst: prefixNet(netip.PrefixFrom(BlackholeAddr, 32))}
	if err := netlink.RouteAdd(r); err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("blackhole route: %w", err)
	}
	return nil
}

func mountResolvConf(path string) error {
	if err := os.WriteFile(path, []byte(ResolvConf()), 0o644); err != nil {
		return fmt.Errorf("write resolv.conf: %w", err)
	}
	// MS_BIND follows a symlinked /etc/resolv.conf to its target, which
	// must exist: there is nothing to mount over otherwise.
	if err := unix.Mount(path, "/etc/resolv.conf", "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind-mount resolv.conf: %w", os.NewSyscallError("mount", err))
	}
	resolvPath = path
	return nil
}

func prefixNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}
