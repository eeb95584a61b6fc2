package supervisor

import (
	"bytes"
	"encoding/binary"
	"net/netip"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/bpf"
	"github.com/nettrap/nettrap/supervisor/internal/targetmem"
)

// Sizes of the option structs the kernel copies in (64-bit layouts; the
// 32-bit ABIs are not decoded, see bpf).
const (
	sizeofIPMreq       = 8   // struct ip_mreq: the smallest IP_ADD_MEMBERSHIP takes
	sizeofIPMreqn      = 12  // struct ip_mreqn: + int imr_ifindex
	sizeofIPMreqSource = 12  // struct ip_mreq_source: multiaddr, interface, sourceaddr
	sizeofIPv6Mreq     = 20  // struct ipv6_mreq: in6_addr, int ifindex
	sizeofGroupReq     = 136 // struct group_req: u32 interface, (pad), sockaddr_storage
	sizeofGroupSrcReq  = 264 // struct group_source_req: + sockaddr_storage source
	offGroupAddr       = 8   // gr_group / gsr_group: sockaddr_storage is 8-aligned
	offGroupSource     = 136 // gsr_source
	ifNameSize         = 16  // IFNAMSIZ
)

// readSockOpt decodes a trapped setsockopt the way the kernel will read
// it (do_ip_setsockopt, do_ipv6_setsockopt, sk_setsockopt): it sets what
// the option does in c. An optval the kernel would refuse as too short
// sets nothing: that call fails in the kernel without any effect. An
// unreadable one fails with EFAULT, as in the kernel.
func readSockOpt(m *targetmem.Reader, c *call) unix.Errno {
	o, ok := bpf.LookupSockOpt(uint32(c.Args[1]), uint32(c.Args[2]))
	if !ok {
		return 0 // the filter sends no other option; nothing to check
	}
	c.Option = o.Label
	optval, optlen := c.Args[3], int64(int32(c.Args[4]))
	// Every option read below reads its value once, through c.opt, which
	// keeps the bytes: an allowed option is then set by the supervisor
	// with those very bytes (emuopt.go), never read again by the kernel.
	c.opt = optValue{m: m, optlen: optlen}
	defer func() { c.opt.m = nil }()
	r := &c.opt
	switch o.Effect {
	case bpf.SourceRouteOpt:
		c.SourceRoute = true
		return 0
	case bpf.PinOpt:
		pin, errno := readPinOpt(r, o, optval, optlen)
		c.Pin = pin
		c.opt.settable = errno == 0
		return errno
	case bpf.NetfilterOpt:
		// A table or IPVS service of the socket's namespace: which one
		// is decided with the socket (Call.SocketInStartingNetns).
		c.Netfilter = true
		return 0
	case bpf.JoinOpt:
		j, errno := readJoinOpt(r, o, optval, optlen)
		c.opt.settable = errno == 0
		if j.ifindex != loopbackIndex {
			// A join on lo, named by its index, is announced on lo
			// only: nothing to decide, like a pin to lo.
			c.Group, c.GroupSource = j.group, j.source
		}
		return errno
	}
	return 0
}

// readPinOpt returns the interface a pinning option names, or "" when it
// names none or lo.
func readPinOpt(m *optValue, o bpf.SockOpt, optval uint64, optlen int64) (string, unix.Errno) {
	switch {
	case o.Level == unix.SOL_SOCKET && o.Name == unix.SO_BINDTODEVICE:
		// sock_setbindtodevice: at most IFNAMSIZ-1 bytes, NUL-padded.
		buf, errno := readOptval(m, optval, min(max(optlen, 0), ifNameSize-1))
		if errno != 0 {
			return "", errno
		}
		name, _, _ := bytes.Cut(buf, []byte{0})
		return pinnedName(string(name)), 0
	case o.Level == unix.SOL_SOCKET && o.Name == unix.SO_BINDTOIFINDEX:
		v, ok, errno := readInt(m, optval, optlen)
		if !ok {
			return "", errno
		}
		return pinnedIndex(int32(v)), 0
	case o.Name == unix.IP_UNICAST_IF && o.Level == unix.IPPROTO_IP:
		// do_ip_setsockopt reads an int, or a single byte when optlen is
		// shorter; the index is in network byte order.
		var v uint32
		var errno unix.Errno
		switch {
		case optlen >= 4:
			v, _, errno = readInt(m, optval, optlen)
		case optlen >= 1:
			var b []byte
			if b, errno = readOptval(m, optval, 1); errno == 0 {
				v = uint32(b[0])
			}
		}
		if errno != 0 {
			return "", errno
		}
		return pinnedIndex(int32(ntohl(v))), 0
	case o.Name == unix.IPV6_UNICAST_IF && o.Level == unix.IPPROTO_IPV6:
		if optlen != 4 {
			return "", 0 // EINVAL in the kernel
		}
		v, _, errno := readInt(m, optval, optlen)
		if errno != 0 {
			return "", errno
		}
		return pinnedIndex(int32(ntohl(v))), 0
	case o.Name == unix.IPV6_PKTINFO && o.Level == unix.IPPROTO_IPV6:
		if optlen < sizeofIn6Pktinfo {
			return "", 0 // EINVAL in the kernel
		}
		b, errno := readOptval(m, optval, sizeofIn6Pktinfo)
		if errno != 0 {
			return "", errno
		}
		return pinnedIndex(int32(binary.NativeEndian.Uint32(b[16:]))), 0
	}
	// A pinning option this code does not know: deny it by naming it.
	return "(" + o.Label + ")", 0
}

// readInt reads the int option value the generic sk_setsockopt path
// takes: optlen must hold an int, or the kernel fails with EINVAL (ok is
// false and errno 0).
func readInt(m *optValue, optval uint64, optlen int64) (uint32, bool, unix.Errno) {
	if optlen < 4 {
		return 0, false, 0
	}
	b, errno := readOptval(m, optval, 4)
	if errno != 0 {
		return 0, false, errno
	}
	return binary.NativeEndian.Uint32(b), true, 0
}

// readOptval reads the first n bytes of an option value, as the kernel's
// copy_from_sockptr will, and keeps them (optValue.read); an unreadable
// one is EFAULT, as the kernel says.
func readOptval(m *optValue, optval uint64, n int64) ([]byte, unix.Errno) {
	return m.read(optval, n)
}

func ntohl(v uint32) uint32 {
	var b [4]byte
	binary.NativeEndian.PutUint32(b[:], v)
	return binary.BigEndian.Uint32(b[:])
}

// join is what a join option names: the group (or IPv6 anycast
// address), the source of a source-specific join, and the interface index
// when the option gives one (0: the kernel picks by route, or by address).
type join struct {
	group, source netip.Addr
	ifindex       int32
}

// readJoinOpt reads a join option. An invalid group means the kernel will
// refuse the option (too short, wrong family).
func readJoinOpt(m *optValue, o bpf.SockOpt, optval uint64, optlen int64) (join, unix.Errno) {
	var j join
	read := func(n int64) ([]byte, unix.Errno) { return readOptval(m, optval, n) }
	switch o.Name {
	case unix.IP_ADD_MEMBERSHIP:
		// struct ip_mreq, or struct ip_mreqn (with an index) when long enough.
		n := int64(sizeofIPMreq)
		if optlen >= sizeofIPMreqn {
			n = sizeofIPMreqn
		} else if optlen < sizeofIPMreq {
			return j, 0
		}
		b, errno := read(n)
		if errno != 0 {
			return j, errno
		}
		j.group = netip.AddrFrom4([4]byte(b[0:4]))
		if n == sizeofIPMreqn {
			j.ifindex = int32(binary.NativeEndian.Uint32(b[8:]))
		}
	case unix.IP_ADD_SOURCE_MEMBERSHIP:
		if optlen != sizeofIPMreqSource {
			return j, 0
		}
		b, errno := read(sizeofIPMreqSource)
		if errno != 0 {
			return j, errno
		}
		j.group, j.source = netip.AddrFrom4([4]byte(b[0:4])), netip.AddrFrom4([4]byte(b[8:12]))
	case unix.IPV6_ADD_MEMBERSHIP, unix.IPV6_JOIN_ANYCAST: // 20 and 27 are IPv6-only numbers
		if o.Level != unix.IPPROTO_IPV6 || optlen < sizeofIPv6Mreq {
			return j, 0
		}
		b, errno := read(sizeofIPv6Mreq)
		if errno != 0 {
			return j, errno
		}
		j.group, j.ifindex = netip.AddrFrom16([16]byte(b[0:16])), int32(binary.NativeEndian.Uint32(b[16:]))
	case unix.MCAST_JOIN_GROUP, unix.MCAST_JOIN_SOURCE_GROUP:
		size := int64(sizeofGroupReq)
		if o.Name == unix.MCAST_JOIN_SOURCE_GROUP {
			size = sizeofGroupSrcReq
		}
		if optlen < size {
			return j, 0
		}
		b, errno := read(size)
		if errno != 0 {
			return j, errno
		}
		j.ifindex = int32(binary.NativeEndian.Uint32(b[0:]))
		j.group = storageAddr(b[offGroupAddr:])
		if o.Name == unix.MCAST_JOIN_SOURCE_GROUP {
			j.source = storageAddr(b[offGroupSource:])
		}
	}
	return j, 0
}

// storageAddr reads the address of a sockaddr_in or sockaddr_in6 held in
// a sockaddr_storage; invalid for any other family.
func storageAddr(b []byte) netip.Addr {
	switch binary.NativeEndian.Uint16(b) {
	case unix.AF_INET:
		return netip.AddrFrom4([4]byte(b[4:8]))
	case unix.AF_INET6:
		return netip.AddrFrom16([16]byte(b[8:24]))
	}
	return netip.Addr{}
}
