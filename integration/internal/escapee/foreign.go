package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"sort"
	"strings"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// The ways from a network namespace of the escapee's own back to the
// starting one (where it runs) or to one it did not make: each needs
// CAP_NET_ADMIN or CAP_SYS_ADMIN over the user namespace that owns that
// namespace. Under nettrap as root the escapee runs in a user namespace
// of its own, and the kernel refuses each step with EPERM. Each op goes
// on after a refused step where the next can still be tried, and returns
// the first error.

// inNewNetns runs f on a locked thread (which dies afterwards) in a new
// network namespace; start is a descriptor of the one it came from.
func inNewNetns(f func(start int) error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies in the new namespace
		start, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			errc <- sysErr("open starting namespace", err)
			return
		}
		defer unix.Close(start)
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			errc <- sysErr("unshare", err)
			return
		}
		errc <- f(start)
	}()
	return <-errc
}

// firstErr keeps the first error noted.
type firstErr struct{ err error }

func (f *firstErr) note(err error) {
	if f.err == nil {
		f.err = err
	}
}

// nsidOf is the id the current namespace has for the namespace at fd,
// assigned (RTM_NEWNSID, which needs no right over that namespace) when
// it has none.
func nsidOf(fd int) (int, error) {
	id, err := netlink.GetNetNsIdByFd(fd)
	if err != nil || id >= 0 {
		return id, err
	}
	if err := netlink.SetNetNsIdByFd(fd, 77); err != nil {
		return -1, fmt.Errorf("RTM_NEWNSID: %w", err)
	}
	return 77, nil
}

// vethVxlan: in a namespace of its own, a veth pair whose peer goes to the
// starting namespace (which gives the new one an id for it), then a VXLAN
// device whose underlay is that id (IFLA_LINK_NETNSID: its UDP socket
// lives in the starting namespace) and whose remote is remote:4789; then
// a UDP send of marker to 127.0.0.9:9, routed into the device, leaves
// encapsulated from the starting namespace.
func vethVxlan(remote, marker string) error {
	r := net.ParseIP(remote).To4()
	if r == nil {
		return fmt.Errorf("bad IPv4 remote %q", remote)
	}
	return inNewNetns(func(start int) error {
		var first firstErr
		// No IPv6 here: the devices would send MLD reports, through
		// the VXLAN too, for a while after the run.
		first.note(sysctl("net/ipv6/conf/all/disable_ipv6", "1"))
		first.note(sysctl("net/ipv6/conf/default/disable_ipv6", "1"))
		veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "esc-a"}, PeerName: "esc-b", PeerNamespace: netlink.NsFd(start)}
		if err := netlink.LinkAdd(veth); err != nil {
			first.note(fmt.Errorf("veth peer into the starting namespace: %w", err))
		}
		nsid, err := nsidOf(start)
		if err != nil {
			first.note(err)
			return first.err
		}
		data := []*nl.RtAttr{
			nl.NewRtAttr(nl.IFLA_VXLAN_ID, nl.Uint32Attr(42)),
			nl.NewRtAttr(nl.IFLA_VXLAN_GROUP, r),
			nl.NewRtAttr(nl.IFLA_VXLAN_PORT, binary.BigEndian.AppendUint16(nil, 4789)),
		}
		if err := addForeignLink("esc-vx", "vxlan", 0, nsid, data); err != nil {
			first.note(fmt.Errorf("vxlan over the starting namespace: %w", err))
			return first.err
		}
		first.note(routeLoopbackInto("esc-vx", "10.99.0.1/24", "127.0.0.9/32"))
		first.note(sendUDPTo("127.0.0.9:9", marker))
		return first.err
	})
}

// vethOwn: from a namespace of its own (a), a second one (b), and there a
// veth whose peer goes to a, named by descriptor; then, back in a, the
// peer must be there. Honest: both namespaces are the escapee's own.
func vethOwn() error {
	return inNewNetns(func(int) error {
		a, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return sysErr("open namespace a", err)
		}
		defer unix.Close(a)
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			return sysErr("unshare b", err)
		}
		// Held until the check below: once the thread leaves b, nothing
		// else keeps b alive, and the kernel's teardown of b deletes
		// own-b and with it its peer in a, asynchronously. Unheld, the
		// check raced that teardown and lost now and then under load
		// (more often where each netlink call is trapped).
		b, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return sysErr("open namespace b", err)
		}
		defer unix.Close(b)
		veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "own-b"}, PeerName: "own-a", PeerNamespace: netlink.NsFd(a)}
		if err := netlink.LinkAdd(veth); err != nil {
			return fmt.Errorf("veth peer into namespace a: %w", err)
		}
		if err := unix.Setns(a, unix.CLONE_NEWNET); err != nil {
			return sysErr("setns a", err)
		}
		if _, err := netlink.LinkByName("own-a"); err != nil {
			return fmt.Errorf("the peer in namespace a: %w (links: %s)", err, linksOf(map[string]int{"a": a, "b": b}))
		}
		return nil
	})
}

// linksOf names the links of each namespace (by descriptor), for a
// failure's message: where a link went when it is not where it should be.
func linksOf(nss map[string]int) string {
	var out []string
	for name, fd := range nss {
		h, err := netlink.NewHandleAt(netns.NsHandle(fd))
		if err != nil {
			out = append(out, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		links, err := h.LinkList()
		h.Close()
		names := make([]string, 0, len(links))
		for _, l := range links {
			names = append(names, l.Attrs().Name)
		}
		out = append(out, fmt.Sprintf("%s: %v %v", name, names, err))
	}
	sort.Strings(out)
	return strings.Join(out, "; ")
}

// macvlanOut: in a namespace of its own, a macvlan on the starting
// namespace's interface iface (IFLA_LINK + IFLA_LINK_NETNSID) with an
// address on its segment and the default route out of it; then the
// namespace's own DNAT 127.0.0.2:80 -> 203.0.113.7:80 (redirect.go) and
// a connect to 127.0.0.2:80 sending marker reach the outside.
func macvlanOut(iface, addr, gw, marker string) error {
	ifi, err := net.InterfaceByName(iface)
	if err != nil {
		return err
	}
	return inNewNetns(func(start int) error {
		nsid, err := nsidOf(start)
		if err != nil {
			return err
		}
		data := []*nl.RtAttr{nl.NewRtAttr(nl.IFLA_MACVLAN_MODE, nl.Uint32Attr(nl.MACVLAN_MODE_BRIDGE))}
		if err := addForeignLink("esc-mv", "macvlan", ifi.Index, nsid, data); err != nil {
			return fmt.Errorf("macvlan on the starting namespace's %s: %w", iface, err)
		}
		var first firstErr
		first.note(sysctl("net/ipv6/conf/all/disable_ipv6", "1"))
		first.note(sysctl("net/ipv6/conf/default/disable_ipv6", "1"))
		first.note(linkUp("lo"))
		first.note(routeLocalnet("esc-mv"))
		first.note(addrUp("esc-mv", addr))
		first.note(netlink.RouteAdd(&netlink.Route{Gw: net.ParseIP(gw)}))
		first.note(addDNAT())
		first.note(sendLoopback80(marker))
		return first.err
	})
}

// setnsDNAT enters the network namespace at path (one the escapee did
// not make), adds the DNAT 127.0.0.2:80 -> 203.0.113.7:80 there, and
// connects to 127.0.0.2:80 sending marker.
func setnsDNAT(path, marker string) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread may end elsewhere
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			errc <- &os.PathError{Op: "open", Path: path, Err: err}
			return
		}
		defer unix.Close(fd)
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			errc <- sysErr("setns", err)
			return
		}
		errc <- dnatConnect(marker)
	}()
	return <-errc
}

// addForeignLink adds link name of kind, with info data, whose lower
// device (link, 0 for none) is in the namespace this one calls nsid.
func addForeignLink(name, kind string, link, nsid int, data []*nl.RtAttr) error {
	req := nl.NewNetlinkRequest(unix.RTM_NEWLINK, unix.NLM_F_CREATE|unix.NLM_F_EXCL|unix.NLM_F_ACK)
	req.AddData(nl.NewIfInfomsg(unix.AF_UNSPEC))
	req.AddData(nl.NewRtAttr(unix.IFLA_IFNAME, nl.ZeroTerminated(name)))
	if link != 0 {
		req.AddData(nl.NewRtAttr(unix.IFLA_LINK, nl.Uint32Attr(uint32(link))))
	}
	req.AddData(nl.NewRtAttr(unix.IFLA_LINK_NETNSID, nl.Uint32Attr(uint32(nsid))))
	info := nl.NewRtAttr(unix.IFLA_LINKINFO, nil)
	info.AddRtAttr(nl.IFLA_INFO_KIND, nl.NonZeroTerminated(kind))
	d := info.AddRtAttr(nl.IFLA_INFO_DATA, nil)
	for _, a := range data {
		d.AddChild(a)
	}
	req.AddData(info)
	_, err := req.Execute(unix.NETLINK_ROUTE, 0)
	return err
}

// routeLoopbackInto gives dev the address addr, sets it up, and routes
// dst (a loopback prefix; lo stays down, so nothing is local) into it,
// with a permanent neighbour for dst's address so that nothing waits
// for ARP.
func routeLoopbackInto(dev, addr, dst string) error {
	if err := routeLocalnet(dev); err != nil {
		return err
	}
	if err := addrUp(dev, addr); err != nil {
		return err
	}
	l, err := netlink.LinkByName(dev)
	if err != nil {
		return err
	}
	_, d, err := net.ParseCIDR(dst)
	if err != nil {
		return err
	}
	if err := netlink.RouteAdd(&netlink.Route{LinkIndex: l.Attrs().Index, Dst: d, Scope: netlink.SCOPE_LINK}); err != nil {
		return fmt.Errorf("route %s dev %s: %w", dst, dev, err)
	}
	mac := net.HardwareAddr{0x02, 0, 0, 0, 0, 0x09}
	n := &netlink.Neigh{LinkIndex: l.Attrs().Index, IP: d.IP, HardwareAddr: mac, State: netlink.NUD_PERMANENT, Family: unix.AF_INET}
	if err := netlink.NeighAdd(n); err != nil {
		return fmt.Errorf("neighbour %s: %w", d.IP, err)
	}
	return nil
}

// addrUp gives dev the address addr (CIDR) and sets it up.
func addrUp(dev, addr string) error {
	l, err := netlink.LinkByName(dev)
	if err != nil {
		return err
	}
	a, err := netlink.ParseAddr(addr)
	if err != nil {
		return err
	}
	if err := netlink.AddrAdd(l, a); err != nil {
		return fmt.Errorf("address %s on %s: %w", addr, dev, err)
	}
	return netlink.LinkSetUp(l)
}

// routeLocalnet sets route_localnet for all, default and dev in the
// current namespace (the thread's: /proc/thread-self/net would do too).
func routeLocalnet(dev string) error {
	var errs []error
	for _, k := range []string{"all", "default", dev} {
		p := "/proc/sys/net/ipv4/conf/" + k + "/route_localnet"
		errs = append(errs, os.WriteFile(p, []byte("1"), 0o644))
	}
	return errors.Join(errs...)
}

// sysctl sets /proc/sys/NAME in the current namespace.
func sysctl(name, v string) error {
	return os.WriteFile("/proc/sys/"+name, []byte(v), 0o644)
}

// sendUDPTo sends marker to dst from a fresh UDP socket.
func sendUDPTo(dst, marker string) error {
	c, err := net.Dial("udp4", dst)
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Write([]byte(marker))
	return err
}
