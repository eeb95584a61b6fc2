package supervisor

import (
	"encoding/binary"

	"golang.org/x/sys/unix"
)

const (
	sizeofCmsghdr = 16 // struct cmsghdr on 64-bit ABIs: size_t len; int level; int type
	// maxControl bounds how much control data is read. The kernel copies
	// msg_control into a buffer of at most optmem_max (128 KiB by default)
	// and fails with ENOBUFS past that.
	maxControl = 1 << 20
)

// readSourceRoute tells whether a message's control data holds a source
// route: IP_RETOPTS (IPv4 options, among them LSRR/SSRR) or an IPv6 routing
// header (IPV6_RTHDR, IPV6_2292RTHDR). With one, the kernel sends the
// packet first to an address inside the option, whatever msg_name or the
// connected peer says.
func readSourceRoute(m *memReader, h msghdr) (bool, unix.Errno) {
	if h.control == 0 || h.controllen < sizeofCmsghdr {
		return false, 0
	}
	if h.controllen > maxControl {
		return false, unix.ENOBUFS
	}
	buf := make([]byte, h.controllen)
	if err := m.read(h.control, buf); err != nil {
		return false, unix.EFAULT
	}
	return hasSourceRoute(buf), 0
}

// hasSourceRoute walks control messages as the kernel's for_each_cmsghdr
// does. A malformed one ends the walk: the kernel rejects the whole call
// (EINVAL) before sending anything.
func hasSourceRoute(b []byte) bool {
	for off := 0; off+sizeofCmsghdr <= len(b); {
		n := binary.NativeEndian.Uint64(b[off:])
		level := int32(binary.NativeEndian.Uint32(b[off+8:]))
		typ := int32(binary.NativeEndian.Uint32(b[off+12:]))
		if n < sizeofCmsghdr || n > uint64(len(b)-off) {
			return false
		}
		switch {
		case level == unix.IPPROTO_IP && typ == unix.IP_RETOPTS,
			level == unix.IPPROTO_IPV6 && (typ == unix.IPV6_RTHDR || typ == unix.IPV6_2292RTHDR):
			return true
		}
		off += int((n + 7) &^ 7)
	}
	return false
}
