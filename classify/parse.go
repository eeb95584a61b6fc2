package classify

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"strconv"

	"golang.org/x/sys/unix"
)

// Sizes of the kernel's sockaddr structures.
const (
	sizeofSockaddrStorage = 128 // sizeof(struct sockaddr_storage)
	sizeofSockaddrInet4   = 16  // sizeof(struct sockaddr_in)
	sizeofSin6RFC2133     = 24  // SIN6_LEN_RFC2133: sockaddr_in6 without scope id
	sizeofSockaddrInet6   = 28  // sizeof(struct sockaddr_in6)
	sizeofSockaddrUnix    = 110 // sizeof(struct sockaddr_un)
	sizeofSockaddrNetlink = 12  // sizeof(struct sockaddr_nl)
	sizeofFamily          = 2   // sizeof(sa_family_t)
)

var (
	// ErrTruncated: the sockaddr is too short for its family. The kernel
	// answers EINVAL.
	ErrTruncated = errors.New("classify: sockaddr truncated")
	// ErrTooLong: the sockaddr is longer than the kernel accepts. The
	// kernel answers EINVAL.
	ErrTooLong = errors.New("classify: sockaddr too long")
)

// Parse reads b, exactly the addrlen bytes the caller passed, as the kernel
// would. The socket's family is unknown, so an AF_UNSPEC send is read both
// ways (see Dest.Unspec6). It is ParseIn(b, op, AF_UNSPEC).
func Parse(b []byte, op Op) (Dest, error) {
	return ParseIn(b, op, unix.AF_UNSPEC)
}

// ParseIn is Parse for a socket whose family (SO_DOMAIN) the caller knows.
// The family only matters for an AF_UNSPEC send: an AF_INET6 socket reads
// it as a sockaddr_in6 (rawv6_sendmsg, l2tp_ip6_sendmsg; udpv6_sendmsg
// ignores it, so being strict there costs nothing), any other socket as a
// sockaddr_in (udp_sendmsg, raw_sendmsg, l2tp_ip_sendmsg). AF_UNSPEC means
// unknown.
func ParseIn(b []byte, op Op, domain uint16) (Dest, error) {
	if len(b) < sizeofFamily {
		return Dest{}, ErrTruncated
	}
	if len(b) > sizeofSockaddrStorage {
		return Dest{}, ErrTooLong
	}
	family := binary.NativeEndian.Uint16(b)
	switch family {
	case unix.AF_UNSPEC:
		return parseUnspec(b, op, domain)
	case unix.AF_INET:
		return parseInet4(b)
	case unix.AF_INET6:
		return parseInet6(b)
	case unix.AF_UNIX:
		return parseUnix(b)
	case unix.AF_NETLINK:
		if len(b) < sizeofSockaddrNetlink {
			return Dest{}, ErrTruncated
		}
	}
	return Dest{Family: family}, nil
}

// parseUnspec follows the kernel: connect(AF_UNSPEC) is a disconnect; a
// send reads the bytes as the address the protocol would use.
func parseUnspec(b []byte, op Op, domain uint16) (Dest, error) {
	none := Dest{Family: unix.AF_UNSPEC, NoDest: true}
	if op == OpConnect {
		return none, nil
	}
	if domain == unix.AF_INET6 {
		if len(b) < sizeofSin6RFC2133 {
			return none, nil // udpv6 uses the peer, raw/l2tp v6 say EINVAL
		}
		d, err := parseInet6(b)
		d.Family, d.Unspec = unix.AF_INET6, true
		return d, err
	}
	if len(b) < sizeofSockaddrInet4 {
		return none, nil // IPv4 says EINVAL, IPv6 UDP uses the peer
	}
	d, err := parseInet4(b)
	d.Family, d.Unspec = unix.AF_INET, true
	if domain == unix.AF_UNSPEC && len(b) >= sizeofSin6RFC2133 {
		d6, _ := parseInet6(b) // cannot fail: length checked
		d.Unspec6 = d6.Addr
	}
	return d, err
}

func parseInet4(b []byte) (Dest, error) {
	if len(b) < sizeofSockaddrInet4 {
		return Dest{}, ErrTruncated
	}
	addr := netip.AddrFrom4([4]byte(b[4:8]))
	port := binary.BigEndian.Uint16(b[2:4])
	return Dest{Family: unix.AF_INET, Addr: netip.AddrPortFrom(addr, port)}, nil
}

func parseInet6(b []byte) (Dest, error) {
	if len(b) < sizeofSin6RFC2133 {
		return Dest{}, ErrTruncated
	}
	addr := netip.AddrFrom16([16]byte(b[8:24]))
	if len(b) >= sizeofSockaddrInet6 {
		if scope := binary.NativeEndian.Uint32(b[24:28]); scope != 0 {
			addr = addr.WithZone(strconv.FormatUint(uint64(scope), 10))
		}
	}
	port := binary.BigEndian.Uint16(b[2:4])
	return Dest{Family: unix.AF_INET6, Addr: netip.AddrPortFrom(addr, port)}, nil
}

// parseUnix mirrors unix_mkname_bsd: the kernel terminates the copy at
// addrlen, so sun_path need not carry a NUL, and a path ends at its first
// NUL. An abstract name is every byte after the leading NUL.
func parseUnix(b []byte) (Dest, error) {
	if len(b) > sizeofSockaddrUnix {
		return Dest{}, ErrTooLong
	}
	d := Dest{Family: unix.AF_UNIX}
	path := b[sizeofFamily:]
	switch {
	case len(path) == 0:
		d.Unnamed = true
	case path[0] == 0:
		d.Abstract = true
		d.Path = string(path[1:])
	default:
		for i, c := range path {
			if c == 0 {
				path = path[:i]
				break
			}
		}
		d.Path = string(path)
	}
	return d, nil
}
