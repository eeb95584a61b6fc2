package main

import (
	"golang.org/x/sys/unix"
)

// htons converts a 16-bit protocol number to network byte order, as the
// protocol argument of AF_PACKET sockets wants it.
func htons(v uint16) int { return int(v>>8 | v<<8) }

// openClose creates a socket and closes it: these sockets need no
// destination to put frames on the wire, so creating one is the leak.
func openClose(domain, typ, proto int) (any, error) {
	fd, err := unix.Socket(domain, typ|unix.SOCK_CLOEXEC, proto)
	if err != nil {
		return nil, sysErr("socket", err)
	}
	return nil, sysErr("close", unix.Close(fd))
}

func rawSocket([]string) (any, error) {
	return openClose(unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_ICMP)
}

func raw6Socket([]string) (any, error) {
	return openClose(unix.AF_INET6, unix.SOCK_RAW, unix.IPPROTO_ICMPV6)
}

func packetSocket([]string) (any, error) {
	return openClose(unix.AF_PACKET, unix.SOCK_RAW, htons(unix.ETH_P_ALL))
}

// inetSockPacket asks for (AF_INET, SOCK_PACKET): the kernel quietly turns
// it into an AF_PACKET socket, so a check on the family alone misses it.
func inetSockPacket([]string) (any, error) {
	return openClose(unix.AF_INET, unix.SOCK_PACKET, htons(unix.ETH_P_ALL))
}

// netlinkRawSocket is the SOCK_RAW that must stay allowed.
func netlinkRawSocket([]string) (any, error) {
	return openClose(unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE)
}

func ioUringSetup([]string) (any, error) {
	fd, err := ioUringSetupRaw(4)
	if err != nil {
		return nil, sysErr("io_uring_setup", err)
	}
	return nil, sysErr("close", unix.Close(fd))
}
