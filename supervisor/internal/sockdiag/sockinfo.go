package sockdiag

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/classify"
	"github.com/nettrap/nettrap/procfs"
)

// SocketType tells what kind of socket fd is in process pid. It first
// borrows the descriptor with pidfd_getfd and asks the socket itself;
// where that is refused (Docker's default profile denies pidfd_getfd
// without CAP_SYS_PTRACE) it asks the socket's protocol name through
// /proc, and last looks the socket's inode up in the target's
// /proc/PID/net tables.
func SocketType(pid, tid, fd int) string {
	if s := socketTypeByPidfd(pid, fd); s != "" {
		return s
	}
	if s := socketTypeByXattr(tid, fd); s != "" {
		return s
	}
	return procfs.SocketKind(tid, fd)
}

// socketTypeByXattr asks the socket's protocol name through the caller's
// /proc fd link (the sockfs attribute system.sockprotoname): it needs no
// pidfd_getfd, and unlike the /proc/PID/net tables it knows sockets that
// are not bound yet, as a fresh UDP socket at its connect.
func socketTypeByXattr(tid, fd int) string {
	name, ok := procfs.SocketProtoName(tid, fd)
	if !ok {
		return ""
	}
	return protoNameType(name)
}

// protoNameType names a kernel protocol name ("TCPv6", "UDP",
// "UNIX-STREAM") as socketTypeName does; "" for one it does not know.
func protoNameType(name string) string {
	base := strings.TrimSuffix(name, "v6")
	switch base {
	case "TCP", "MPTCP":
		return "tcp"
	case "UDP", "UDPLITE", "UDP-Lite":
		return "udp"
	case "PING":
		return "icmp"
	case "RAW":
		return "raw"
	case "SCTP":
		return "sctp"
	case "PACKET":
		return "packet"
	case "NETLINK":
		return "netlink"
	case "UNIX-STREAM":
		return "unix-stream"
	case "UNIX":
		return "unix" // datagram or seqpacket: one protocol serves both
	}
	return ""
}

func socketTypeByPidfd(pid, fd int) string {
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return ""
	}
	defer unix.Close(pidfd)
	sfd, err := unix.PidfdGetfd(pidfd, fd, 0)
	if err != nil {
		return ""
	}
	defer unix.Close(sfd)
	domain, err1 := unix.GetsockoptInt(sfd, unix.SOL_SOCKET, unix.SO_DOMAIN)
	typ, err2 := unix.GetsockoptInt(sfd, unix.SOL_SOCKET, unix.SO_TYPE)
	proto, err3 := unix.GetsockoptInt(sfd, unix.SOL_SOCKET, unix.SO_PROTOCOL)
	if err1 != nil || err2 != nil || err3 != nil {
		return ""
	}
	return SocketTypeName(domain, typ, proto)
}

// SocketTypeName names a (domain, type, protocol) triple the way people
// speak of sockets: tcp, udp, raw, unix-stream, packet, …
func SocketTypeName(domain, typ, proto int) string {
	switch domain {
	case unix.AF_INET, unix.AF_INET6:
		switch {
		case typ == unix.SOCK_STREAM && (proto == 0 || proto == unix.IPPROTO_TCP):
			return "tcp"
		case typ == unix.SOCK_STREAM && proto == unix.IPPROTO_MPTCP:
			return "tcp" // Go's listeners use MPTCP where the kernel has it
		case typ == unix.SOCK_DGRAM && (proto == 0 || proto == unix.IPPROTO_UDP):
			return "udp"
		case typ == unix.SOCK_DGRAM && (proto == unix.IPPROTO_ICMP || proto == unix.IPPROTO_ICMPV6):
			return "icmp"
		case typ == unix.SOCK_RAW:
			return "raw"
		case typ == unix.SOCK_PACKET:
			return "packet"
		case proto == unix.IPPROTO_SCTP:
			return "sctp"
		}
		return fmt.Sprintf("inet type %d proto %d", typ, proto)
	case unix.AF_UNIX:
		switch typ {
		case unix.SOCK_STREAM:
			return "unix-stream"
		case unix.SOCK_DGRAM:
			return "unix-dgram"
		case unix.SOCK_SEQPACKET:
			return "unix-seqpacket"
		}
		return "unix"
	case unix.AF_PACKET:
		return "packet"
	case unix.AF_NETLINK:
		return "netlink"
	}
	return classify.FamilyName(uint16(domain)) // "xdp", "vsock", or "family N"
}
