package main

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	"golang.org/x/sys/unix"
)

// join joins group with the named option, on the interface the kernel
// picks (interface 0: the route to the group, here the veth), or on
// ifindex where the option takes an index. The membership lasts until
// exit; the kernel reports the join, and then the leave, on that
// interface.
func join(option, groupStr string, rest []string, ifindex uint32) error {
	group, err := netip.ParseAddr(groupStr)
	if err != nil {
		return err
	}
	var source netip.Addr
	if len(rest) == 1 {
		if source, err = netip.ParseAddr(rest[0]); err != nil {
			return err
		}
	}
	fam, level := unix.AF_INET, unix.IPPROTO_IP
	if group.Is6() {
		fam, level = unix.AF_INET6, unix.IPPROTO_IPV6
	}
	fd, err := unix.Socket(fam, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return sysErr("socket", err)
	}
	defer unix.Close(fd)
	var name int
	var val []byte
	switch option {
	case "ip-add-membership": // struct ip_mreqn, any interface
		name, val = unix.IP_ADD_MEMBERSHIP, make([]byte, 12)
		put4(val, group)
		binary.NativeEndian.PutUint32(val[8:], ifindex)
	case "ip-add-source-membership": // struct ip_mreq_source
		name, val = unix.IP_ADD_SOURCE_MEMBERSHIP, make([]byte, 12)
		put4(val, group)
		put4(val[8:], source)
	case "mcast-join-group": // struct group_req
		name, val = unix.MCAST_JOIN_GROUP, make([]byte, 136)
		binary.NativeEndian.PutUint32(val, ifindex)
		putStorage(val[8:], group)
	case "mcast-join-source-group": // struct group_source_req
		name, val = unix.MCAST_JOIN_SOURCE_GROUP, make([]byte, 264)
		binary.NativeEndian.PutUint32(val, ifindex)
		putStorage(val[8:], group)
		putStorage(val[136:], source)
	case "ipv6-join-group": // struct ipv6_mreq, any interface
		name, val = unix.IPV6_JOIN_GROUP, make([]byte, 20)
		g := group.As16()
		copy(val, g[:])
		binary.NativeEndian.PutUint32(val[16:], ifindex)
	default:
		return fmt.Errorf("unknown join option %q", option)
	}
	return sysErr("setsockopt", unix.SetsockoptString(fd, level, name, string(val)))
}

func put4(b []byte, a netip.Addr) {
	v := a.As4()
	copy(b, v[:])
}

// putStorage writes a as a sockaddr_in or sockaddr_in6 (port 0).
func putStorage(b []byte, a netip.Addr) {
	if a.Is4() {
		binary.NativeEndian.PutUint16(b, unix.AF_INET)
		put4(b[4:], a)
		return
	}
	binary.NativeEndian.PutUint16(b, unix.AF_INET6)
	v := a.As16()
	copy(b[8:], v[:])
}
