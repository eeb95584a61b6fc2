package sandbox

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// verify checks that the sandbox is what the tests rely on: the only way out
// is lo, every address is usable, resolv.conf is ours, casts go to lo.
func verify() error {
	if err := verifyLinks(); err != nil {
		return err
	}
	for _, a := range addrs {
		if err := verifyUsable(a); err != nil {
			return err
		}
	}
	if err := verifyResolvConf(); err != nil {
		return err
	}
	for _, dst := range []string{"224.0.0.1", "255.255.255.255", "ff02::1"} {
		if err := verifyRoutedToLo(netip.MustParseAddr(dst)); err != nil {
			return err
		}
	}
	if blackholeErr != nil && errors.Is(blackholeErr, errNotChecked) {
		blackholeErr = verifyBlackhole()
	}
	return nil
}

var errNotChecked = errors.New("blackhole not checked")

// verifyLinks makes sure no interface but lo exists:
// that is what keeps every packet on this machine.
func verifyLinks() error {
	links, err := netlink.LinkList()
	if err != nil {
		return fmt.Errorf("list links: %w", err)
	}
	for _, l := range links {
		name := l.Attrs().Name
		if name != "lo" {
			return fmt.Errorf("unexpected interface %q (%s) in the sandbox", name, l.Type())
		}
	}
	return nil
}

// usableWait bounds the wait for a fresh address to become usable.
const usableWait = 10 * time.Second

// verifyUsable listens on a and connects to it: a tentative or missing
// address fails here rather than in some test. It waits a little, because
// even with IFA_F_NODAD the kernel installs the local route of a new IPv6
// address from a work queue, after RTM_NEWADDR has already returned.
func verifyUsable(a netip.Addr) error {
	deadline := time.Now().Add(usableWait)
	for {
		err := tryUsable(a)
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func tryUsable(a netip.Addr) error {
	ln, err := net.Listen("tcp", netip.AddrPortFrom(a, 0).String())
	if err != nil {
		return fmt.Errorf("address %s not usable: %w", a, err)
	}
	defer ln.Close()
	c, err := net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
	if err != nil {
		return fmt.Errorf("address %s not reachable: %w", a, err)
	}
	return c.Close()
}

func verifyResolvConf() error {
	got, err := os.ReadFile("/etc/resolv.conf")
	if err != nil {
		return fmt.Errorf("read back /etc/resolv.conf: %w", err)
	}
	if string(got) != ResolvConf() {
		return fmt.Errorf("/etc/resolv.conf is not the generated one:\n%s", got)
	}
	if resolvPath == "" {
		return errors.New("path of the generated resolv.conf unknown")
	}
	own, err := os.ReadFile(resolvPath)
	if err != nil || string(own) != ResolvConf() {
		return fmt.Errorf("generated resolv.conf %s unreadable or changed: %v", resolvPath, err)
	}
	return nil
}

func verifyRoutedToLo(dst netip.Addr) error {
	rs, err := netlink.RouteGet(dst.AsSlice())
	if err != nil {
		return fmt.Errorf("no route to %s: %w", dst, err)
	}
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("find lo: %w", err)
	}
	for _, r := range rs {
		if r.LinkIndex != lo.Attrs().Index {
			return fmt.Errorf("%s is routed to link %d, not lo", dst, r.LinkIndex)
		}
	}
	return nil
}

func verifyBlackhole() error {
	if err := verifyRoutedToLo(BlackholeAddr); err != nil {
		return fmt.Errorf("blackhole: %w", err)
	}
	local, err := netlink.RouteListFiltered(netlink.FAMILY_V4,
		&netlink.Route{Table: unix.RT_TABLE_LOCAL, Dst: prefixNet(netip.PrefixFrom(BlackholeAddr, 32))},
		netlink.RT_FILTER_TABLE|netlink.RT_FILTER_DST)
	if err != nil {
		return fmt.Errorf("blackhole: %w", err)
	}
	if len(local) != 0 {
		return fmt.Errorf("blackhole %s is a local address: it would answer", BlackholeAddr)
	}
	return nil
}
