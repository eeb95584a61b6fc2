package decode

import (
	"encoding/binary"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/supervisor/internal/sockopt"
	"github.com/nettrap/nettrap/supervisor/internal/targetmem"
)

const (
	SizeofCmsghdr = 16 // struct cmsghdr on 64-bit ABIs: size_t len; int level; int type
	// maxControl bounds how much control data is read. The kernel copies
	// msg_control into a buffer of at most optmem_max (128 KiB by default)
	// and fails with ENOBUFS past that.
	maxControl = 1 << 20
)

// control is what a message's control data changes about where it goes.
type control struct {
	// sourceRoute: IP_RETOPTS (IPv4 options, among them LSRR/SSRR) or an
	// IPv6 routing header (IPV6_RTHDR, IPV6_2292RTHDR). With one, the
	// kernel sends the packet first to an address inside the option,
	// whatever msg_name or the connected peer says.
	sourceRoute bool
	// pin names the interface an IP_PKTINFO or IPV6_PKTINFO message pins
	// the send to, when it is not loopback ("" otherwise): the kernel then
	// routes even a loopback destination out of that interface.
	pin string
	// raw is the control data as read, for an emulated send.
	raw []byte
}

// readControl reads and scans a message's control data.
func readControl(m *targetmem.Reader, h msghdr, store []byte, have bool) (control, unix.Errno) {
	if h.control == 0 || h.controllen < SizeofCmsghdr {
		return control{}, 0
	}
	if h.controllen > maxControl {
		return control{}, unix.ENOBUFS
	}
	var buf []byte
	if uint64(len(store)) >= h.controllen {
		buf = store[:h.controllen:h.controllen]
	} else {
		buf = make([]byte, h.controllen)
	}
	if !have && m.Read(h.control, buf) != nil { // have: read by prereadMsg, into store
		return control{}, unix.EFAULT
	}
	c := scanControl(buf)
	c.raw = buf
	return c, 0
}

// scanControl walks control messages as the kernel's for_each_cmsghdr
// does. A malformed one ends the walk: the kernel rejects the whole call
// (EINVAL) before sending anything.
//
// The pktinfo address fields pick a source address, not a route (spec_dst
// of IP_PKTINFO, ipi6_addr of IPV6_PKTINFO): the route is still looked up
// by destination and interface, so only the interface index is checked.
// A pktinfo shorter than its struct makes the kernel fail the call.
func scanControl(b []byte) control {
	var c control
	for off := 0; off+SizeofCmsghdr <= len(b); {
		n := binary.NativeEndian.Uint64(b[off:])
		level := int32(binary.NativeEndian.Uint32(b[off+8:]))
		typ := int32(binary.NativeEndian.Uint32(b[off+12:]))
		if n < SizeofCmsghdr || n > uint64(len(b)-off) {
			return c
		}
		data := b[off+SizeofCmsghdr : off+int(n)]
		switch {
		case level == unix.IPPROTO_IP && typ == unix.IP_RETOPTS,
			level == unix.IPPROTO_IPV6 && (typ == unix.IPV6_RTHDR || typ == unix.IPV6_2292RTHDR):
			c.sourceRoute = true
		case level == unix.IPPROTO_IP && typ == unix.IP_PKTINFO && len(data) >= unix.SizeofInet4Pktinfo:
			c.pin = firstPin(c.pin, sockopt.PinnedIndex(int32(binary.NativeEndian.Uint32(data[0:]))))
		case level == unix.IPPROTO_IPV6 && (typ == unix.IPV6_PKTINFO || typ == unix.IPV6_2292PKTINFO) &&
			len(data) >= unix.SizeofInet6Pktinfo:
			c.pin = firstPin(c.pin, sockopt.PinnedIndex(int32(binary.NativeEndian.Uint32(data[16:]))))
		}
		off += int((n + 7) &^ 7)
	}
	return c
}

func firstPin(have, found string) string {
	if have != "" {
		return have
	}
	return found
}
