package sockopt

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"strconv"

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

// ReadPin returns the interface a pinning option names, or "" when it
// names none or lo.
func ReadPin(m *Value, o bpf.SockOpt, optval uint64, optlen int64) (string, unix.Errno) {
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
		return PinnedIndex(int32(v)), 0
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
		return PinnedIndex(int32(ntohl(v))), 0
	case o.Name == unix.IPV6_UNICAST_IF && o.Level == unix.IPPROTO_IPV6:
		if optlen != 4 {
			return "", 0 // EINVAL in the kernel
		}
		v, _, errno := readInt(m, optval, optlen)
		if errno != 0 {
			return "", errno
		}
		return PinnedIndex(int32(ntohl(v))), 0
	case o.Name == unix.IPV6_PKTINFO && o.Level == unix.IPPROTO_IPV6:
		if optlen < unix.SizeofInet6Pktinfo {
			return "", 0 // EINVAL in the kernel
		}
		b, errno := readOptval(m, optval, unix.SizeofInet6Pktinfo)
		if errno != 0 {
			return "", errno
		}
		return PinnedIndex(int32(binary.NativeEndian.Uint32(b[16:]))), 0
	}
	// A pinning option this code does not know: deny it by naming it.
	return "(" + o.Label + ")", 0
}

// readInt reads the int option value the generic sk_setsockopt path
// takes: optlen must hold an int, or the kernel fails with EINVAL (ok is
// false and errno 0).
func readInt(m *Value, optval uint64, optlen int64) (uint32, bool, unix.Errno) {
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
func readOptval(m *Value, optval uint64, n int64) ([]byte, unix.Errno) {
	return m.Read(optval, n)
}

func ntohl(v uint32) uint32 {
	var b [4]byte
	binary.NativeEndian.PutUint32(b[:], v)
	return binary.BigEndian.Uint32(b[:])
}

// Join is what a Join option names: the group (or IPv6 anycast
// address), the source of a source-specific Join, and the interface index
// when the option gives one (0: the kernel picks by route, or by address).
type Join struct {
	Group, Source netip.Addr
	Ifindex       int32
}

// ReadJoin reads a join option. An invalid group means the kernel will
// refuse the option (too short, wrong family).
func ReadJoin(m *Value, o bpf.SockOpt, optval uint64, optlen int64) (Join, unix.Errno) {
	var j Join
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
		j.Group = netip.AddrFrom4([4]byte(b[0:4]))
		if n == sizeofIPMreqn {
			j.Ifindex = int32(binary.NativeEndian.Uint32(b[8:]))
		}
	case unix.IP_ADD_SOURCE_MEMBERSHIP:
		if optlen != sizeofIPMreqSource {
			return j, 0
		}
		b, errno := read(sizeofIPMreqSource)
		if errno != 0 {
			return j, errno
		}
		j.Group, j.Source = netip.AddrFrom4([4]byte(b[0:4])), netip.AddrFrom4([4]byte(b[8:12]))
	case unix.IPV6_ADD_MEMBERSHIP, unix.IPV6_JOIN_ANYCAST: // 20 and 27 are IPv6-only numbers
		if o.Level != unix.IPPROTO_IPV6 || optlen < sizeofIPv6Mreq {
			return j, 0
		}
		b, errno := read(sizeofIPv6Mreq)
		if errno != 0 {
			return j, errno
		}
		j.Group, j.Ifindex = netip.AddrFrom16([16]byte(b[0:16])), int32(binary.NativeEndian.Uint32(b[16:]))
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
		j.Ifindex = int32(binary.NativeEndian.Uint32(b[0:]))
		j.Group = storageAddr(b[offGroupAddr:])
		if o.Name == unix.MCAST_JOIN_SOURCE_GROUP {
			j.Source = storageAddr(b[offGroupSource:])
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

// Value is the value of a trapped setsockopt as the decision read it:
// the bytes the kernel would copy in, read once from the target
// (readOptval) and kept, so that an allowed option is set with them.
type Value struct {
	M      *targetmem.Reader // while reading only
	Optlen int64
	Got    []byte
	// Settable: the value was read without a fault, so the option may be
	// set by the supervisor (supervisor/emuopt.go).
	Settable bool
}

// Read reads n bytes at addr and keeps them. A trapped option reads its
// value once; a second Read replaces the first.
func (o *Value) Read(addr uint64, n int64) ([]byte, unix.Errno) {
	b := make([]byte, n)
	if err := o.M.Read(addr, b); err != nil {
		return nil, unix.EFAULT
	}
	o.Got = b
	return b, 0
}

// LoopbackIndex is the interface index of lo in every network namespace:
// the kernel registers lo first in each one and refuses to go on if it
// got any other index (LOOPBACK_IFINDEX, drivers/net/loopback.c). So the
// target's lo can be recognised by index without entering its namespace.
const LoopbackIndex = 1

// PinnedIndex describes what pinning to interface index ifindex means:
// "" for no interface (0) or lo, else "ifindex N".
func PinnedIndex(ifindex int32) string {
	if ifindex == 0 || ifindex == LoopbackIndex {
		return ""
	}
	return "ifindex " + strconv.Itoa(int(ifindex))
}

// pinnedName does the same for a name (SO_BINDTODEVICE): "" (unbind) and
// "lo" are fine, any other name is quoted. Names are the target's, in its
// own namespace: lo keeps its name there unless someone with
// CAP_NET_ADMIN renames it while it is down.
func pinnedName(name string) string {
	if name == "" || name == "lo" {
		return ""
	}
	return strconv.Quote(name)
}
