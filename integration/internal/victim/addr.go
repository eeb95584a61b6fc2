package main

import (
	"fmt"
	"net"
	"net/netip"

	"golang.org/x/sys/unix"
)

// parseAddr parses "ip:port"; a bad address is a usage error.
func parseAddr(s string) (netip.AddrPort, error) {
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		return ap, usageError{fmt.Sprintf("bad address %q: %v", s, err)}
	}
	return ap, nil
}

// parseAddr4 is parseAddr for operations that only speak IPv4.
func parseAddr4(s string) (netip.AddrPort, error) {
	ap, err := parseAddr(s)
	if err == nil && !ap.Addr().Is4() {
		err = usageError{fmt.Sprintf("%q: this operation needs an IPv4 address", s)}
	}
	return ap, err
}

// family is AF_INET for IPv4 and AF_INET6 otherwise; a v4-mapped IPv6
// address stays IPv6 on purpose (that is how dual-stack sockets send).
func family(ap netip.AddrPort) int {
	if ap.Addr().Is4() {
		return unix.AF_INET
	}
	return unix.AF_INET6
}

func sockaddr(ap netip.AddrPort) (unix.Sockaddr, error) {
	a := ap.Addr()
	if a.Is4() {
		return &unix.SockaddrInet4{Port: int(ap.Port()), Addr: a.As4()}, nil
	}
	sa := &unix.SockaddrInet6{Port: int(ap.Port()), Addr: a.As16()}
	if z := a.Zone(); z != "" {
		ifi, err := net.InterfaceByName(z)
		if err != nil {
			return nil, usageError{fmt.Sprintf("zone %q: %v", z, err)}
		}
		sa.ZoneId = uint32(ifi.Index)
	}
	return sa, nil
}

// socketFor opens a socket of typ for ap's family; the caller closes it.
func socketFor(ap netip.AddrPort, typ, proto int) (int, unix.Sockaddr, error) {
	sa, err := sockaddr(ap)
	if err != nil {
		return -1, nil, err
	}
	fd, err := unix.Socket(family(ap), typ|unix.SOCK_CLOEXEC, proto)
	if err != nil {
		return -1, nil, sysErr("socket", err)
	}
	return fd, sa, nil
}

// withSocket parses addr, opens a socket of typ for its family, runs op on
// it and closes it: the common frame of the single-address operations.
func withSocket(addr string, typ int, op func(fd int, sa unix.Sockaddr, ap netip.AddrPort) (any, error)) (any, error) {
	ap, err := parseAddr(addr)
	if err != nil {
		return nil, err
	}
	fd, sa, err := socketFor(ap, typ, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	return op(fd, sa, ap)
}
