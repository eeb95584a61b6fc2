package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"syscall"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// routeNetlink adds a route to prefix via gw over rtnetlink, on a fresh
// socket: "write" sends with write(2) (no destination address: the kernel
// checks the socket file's capabilities too), "sendto" names the kernel
// as the destination (as Go's syscall.NetlinkRIB, iproute2 and most
// libraries do). The error is the one in the kernel's ack.
func routeNetlink(prefix, gw, how string) error {
	p, err := netip.ParsePrefix(prefix)
	if err != nil || !p.Addr().Is4() {
		return fmt.Errorf("bad IPv4 prefix %q", prefix)
	}
	g, err := netip.ParseAddr(gw)
	if err != nil || !g.Is4() {
		return fmt.Errorf("bad IPv4 gateway %q", gw)
	}
	fd, err := routeSocket()
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return sendRoute(fd, p, g, how)
}

// routeNetlinkAway does the same on a socket made before its thread moved
// to a new network namespace: a netlink socket acts on the namespace it
// was made in.
func routeNetlinkAway(prefix, gw, how string) error {
	p, err := netip.ParsePrefix(prefix)
	if err != nil || !p.Addr().Is4() {
		return fmt.Errorf("bad IPv4 prefix %q", prefix)
	}
	g, err := netip.ParseAddr(gw)
	if err != nil || !g.Is4() {
		return fmt.Errorf("bad IPv4 gateway %q", gw)
	}
	fd, err := routeSocket()
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies in the new namespace
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			errc <- sysErr("unshare", err)
			return
		}
		errc <- sendRoute(fd, p, g, how)
	}()
	return <-errc
}

func routeSocket() (int, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return -1, sysErr("socket", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		unix.Close(fd)
		return -1, sysErr("bind", err)
	}
	return fd, nil
}

// sendRoute sends RTM_NEWROUTE on fd (how: write or sendto) and reads
// the ack.
func sendRoute(fd int, p netip.Prefix, g netip.Addr, how string) error {
	var err error
	msg := newRouteMsg(p, g)
	switch how {
	case "write":
		_, err = unix.Write(fd, msg)
		err = sysErr("write", err)
	case "sendto":
		err = sysErr("sendto", unix.Sendto(fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}))
	default:
		return fmt.Errorf("bad mode %q (want write or sendto)", how)
	}
	if err != nil {
		return err
	}
	return readAck(fd)
}

// newRouteMsg is RTM_NEWROUTE (NLM_F_CREATE|NLM_F_EXCL|NLM_F_ACK) for
// prefix via gw in the main table.
func newRouteMsg(p netip.Prefix, gw netip.Addr) []byte {
	ne := binary.NativeEndian
	attr := func(typ uint16, v []byte) []byte {
		b := make([]byte, 4+len(v))
		ne.PutUint16(b[0:], uint16(4+len(v)))
		ne.PutUint16(b[2:], typ)
		copy(b[4:], v)
		return b
	}
	dst, via := p.Addr().As4(), gw.As4()
	rt := []byte{unix.AF_INET, byte(p.Bits()), 0, 0, unix.RT_TABLE_MAIN, unix.RTPROT_STATIC,
		unix.RT_SCOPE_UNIVERSE, unix.RTN_UNICAST, 0, 0, 0, 0}
	body := append(append(rt, attr(unix.RTA_DST, dst[:])...), attr(unix.RTA_GATEWAY, via[:])...)
	h := make([]byte, unix.NLMSG_HDRLEN)
	ne.PutUint32(h[0:], uint32(len(h)+len(body)))
	ne.PutUint16(h[4:], unix.RTM_NEWROUTE)
	ne.PutUint16(h[6:], unix.NLM_F_REQUEST|unix.NLM_F_ACK|unix.NLM_F_CREATE|unix.NLM_F_EXCL)
	ne.PutUint32(h[8:], 1)
	return append(h, body...)
}

// readAck reads the kernel's NLMSG_ERROR answer: error 0 is success.
func readAck(fd int) error {
	buf := make([]byte, 8192)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil {
		return sysErr("recvfrom", err)
	}
	msgs, err := syscall.ParseNetlinkMessage(buf[:n])
	if err != nil {
		return err
	}
	for _, m := range msgs {
		if m.Header.Type == unix.NLMSG_ERROR && len(m.Data) >= 4 {
			if e := int32(binary.NativeEndian.Uint32(m.Data)); e != 0 {
				return fmt.Errorf("netlink ack: %w", syscall.Errno(-e))
			}
			return nil
		}
	}
	return errors.New("no ack from the kernel")
}

// routeIoctl adds a route to prefix via gw with the legacy SIOCADDRT.
func routeIoctl(prefix, gw string) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return sysErr("socket", err)
	}
	defer unix.Close(fd)
	return routeIoctlOn(fd, prefix, gw)
}

// routeIoctlAway makes a socket here, then moves its thread to a new
// network namespace and adds the route with SIOCADDRT on that socket:
// the ioctl acts on the socket's namespace, not the caller's.
func routeIoctlAway(prefix, gw string) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return sysErr("socket", err)
	}
	defer unix.Close(fd)
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies in the new namespace
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			errc <- sysErr("unshare", err)
			return
		}
		errc <- routeIoctlOn(fd, prefix, gw)
	}()
	return <-errc
}

func routeIoctlOn(fd int, prefix, gw string) error {
	p, err := netip.ParsePrefix(prefix)
	if err != nil || !p.Addr().Is4() {
		return fmt.Errorf("bad IPv4 prefix %q", prefix)
	}
	g, err := netip.ParseAddr(gw)
	if err != nil || !g.Is4() {
		return fmt.Errorf("bad IPv4 gateway %q", gw)
	}
	rt := rtentry(p, g)
	return sysErr("ioctl(SIOCADDRT)", ioctlBuf(fd, unix.SIOCADDRT, rt))
}

// rtentry lays out struct rtentry (64-bit): rt_dst at 8, rt_gateway at
// 24, rt_genmask at 40 (each a struct sockaddr_in), rt_flags at 56.
func rtentry(p netip.Prefix, gw netip.Addr) []byte {
	b := make([]byte, 120)
	sin := func(off int, a netip.Addr) {
		binary.NativeEndian.PutUint16(b[off:], unix.AF_INET)
		v := a.As4()
		copy(b[off+4:], v[:])
	}
	mask, _ := netip.AddrFromSlice(net.CIDRMask(p.Bits(), 32))
	sin(8, p.Addr())
	sin(24, gw)
	sin(40, mask)
	binary.NativeEndian.PutUint16(b[56:], unix.RTF_UP|unix.RTF_GATEWAY)
	return b
}

// readNetlink reads the namespace over netlink, as tests do:
// net.Interfaces and an RTM_GETROUTE dump.
func readNetlink() error {
	ifs, err := net.Interfaces()
	if err != nil {
		return fmt.Errorf("net.Interfaces: %w", err)
	}
	if len(ifs) == 0 {
		return errors.New("net.Interfaces: no interface")
	}
	rib, err := syscall.NetlinkRIB(unix.RTM_GETROUTE, unix.AF_UNSPEC)
	if err != nil {
		return fmt.Errorf("RTM_GETROUTE dump: %w", err)
	}
	msgs, err := syscall.ParseNetlinkMessage(rib)
	if err != nil {
		return err
	}
	for _, m := range msgs {
		if m.Header.Type == unix.RTM_NEWROUTE {
			return nil
		}
	}
	return errors.New("RTM_GETROUTE dump: no route")
}

// ownNetnsRoute adds a route, over rtnetlink (how: write or sendto) and
// SIOCADDRT, in a network namespace it makes itself (on a locked thread
// that dies afterwards): nettrap leaves that namespace to the test.
func ownNetnsRoute(how string) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies in the new namespace
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			errc <- sysErr("unshare", err)
			return
		}
		if err := linkUp("lo"); err != nil {
			errc <- err
			return
		}
		if err := routeNetlink("198.51.100.0/24", "127.0.0.1", how); err != nil {
			errc <- err
			return
		}
		errc <- routeIoctl("192.0.2.0/24", "127.0.0.1")
	}()
	return <-errc
}

// linkUp sets an interface up over rtnetlink.
func linkUp(name string) error {
	l, err := netlink.LinkByName(name)
	if err != nil {
		return fmt.Errorf("find %s: %w", name, err)
	}
	if err := netlink.LinkSetUp(l); err != nil {
		return fmt.Errorf("set %s up: %w", name, err)
	}
	return nil
}
