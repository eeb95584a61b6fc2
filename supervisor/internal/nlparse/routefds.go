package nlparse

import (
	"bytes"
	"encoding/binary"

	"golang.org/x/sys/unix"
)

// Descriptors named inside rtnetlink requests.
//
// Some rtnetlink attributes carry a descriptor number: a network namespace
// (IFLA_NET_NS_FD, also in a veth, vxcan or netkit peer's own attributes;
// NETNSA_FD) or a BPF program (IFLA_XDP_FD and IFLA_XDP_EXPECTED_FD, a tc
// "bpf" filter's TCA_BPF_FD). The kernel looks the number up in the
// sender's table while it handles the request, in sendmsg. A request
// nettrap sends for a target (supervisor/emuunix.go) would name nettrap's
// descriptors: a veth whose peer goes to "fd 5" would fail, or move the
// peer somewhere else. So each such attribute is rewritten, in nettrap's
// copy of the request, with a copy of the caller's descriptor
// (pidfd_getfd), closed once the call returns. The kernel's own checks
// then see the object the caller named. Descriptors of other attributes
// (tc actions, generic netlink families) are not translated: the number
// names nettrap's table, and such a request fails there (EBADF, EINVAL)
// rather than doing something else; nettrap holds no namespace or BPF
// program a request could widen access through (the kernel checks the
// socket opener's capabilities too: see emuunix.go).

const (
	nlaTypeMask  = 0x3fff // nla_type without NLA_F_NESTED and NLA_F_NET_BYTEORDER
	sizeofTcmsg  = 20
	sizeofRtgen  = 4 // struct rtgenmsg, padded to NLMSG_ALIGN
	tcaBPFFd     = 6 // TCA_BPF_FD
	peerInfoAttr = 1 // VETH_INFO_PEER, VXCAN_INFO_PEER, IFLA_NETKIT_PEER_INFO
)

// peerKinds are the link kinds whose IFLA_INFO_DATA holds a peer's
// ifinfomsg and attributes (which may name its namespace by descriptor).
var peerKinds = map[string]bool{"veth": true, "vxcan": true, "netkit": true}

// RouteFdOffsets returns where, in p (one or more NETLINK_ROUTE
// messages), the 32-bit values of attributes naming a descriptor lie.
// Malformed messages end the walk, as the kernel stops there too.
func RouteFdOffsets(p []byte) []int {
	ne := binary.NativeEndian
	var offs []int
	for off := 0; off+unix.NLMSG_HDRLEN <= len(p); {
		n := int(ne.Uint32(p[off:]))
		if n < unix.NLMSG_HDRLEN || n > len(p)-off {
			break
		}
		body, end := off+unix.NLMSG_HDRLEN, off+n
		switch ne.Uint16(p[off+4:]) {
		case unix.RTM_NEWLINK, unix.RTM_DELLINK, unix.RTM_GETLINK, unix.RTM_SETLINK:
			offs = linkFdOffsets(p, body+unix.SizeofIfInfomsg, end, offs, true)
		case unix.RTM_NEWNSID, unix.RTM_DELNSID, unix.RTM_GETNSID:
			eachAttr(p, body+sizeofRtgen, end, func(typ, vs, ve int) {
				offs = appendFd(offs, typ == unix.NETNSA_FD, vs, ve)
			})
		case unix.RTM_NEWTFILTER:
			offs = tcFdOffsets(p, body+sizeofTcmsg, end, offs)
		}
		off += (n + unix.NLMSG_ALIGNTO - 1) &^ (unix.NLMSG_ALIGNTO - 1)
	}
	return offs
}

// linkFdOffsets walks an RTM_*LINK message's attributes in p[start:end];
// top: not a peer's (a peer has no peer of its own).
func linkFdOffsets(p []byte, start, end int, offs []int, top bool) []int {
	eachAttr(p, start, end, func(typ, vs, ve int) {
		switch typ {
		case unix.IFLA_NET_NS_FD:
			offs = appendFd(offs, true, vs, ve)
		case unix.IFLA_XDP:
			eachAttr(p, vs, ve, func(typ, vs, ve int) {
				offs = appendFd(offs, typ == unix.IFLA_XDP_FD || typ == unix.IFLA_XDP_EXPECTED_FD, vs, ve)
			})
		case unix.IFLA_LINKINFO:
			if top {
				offs = peerFdOffsets(p, vs, ve, offs)
			}
		}
	})
	return offs
}

// peerFdOffsets walks an IFLA_LINKINFO of a kind with a peer.
func peerFdOffsets(p []byte, start, end int, offs []int) []int {
	var kind string
	dataStart, dataEnd := -1, -1
	eachAttr(p, start, end, func(typ, vs, ve int) {
		switch typ {
		case unix.IFLA_INFO_KIND:
			kind = string(bytes.TrimRight(p[vs:ve], "\x00"))
		case unix.IFLA_INFO_DATA:
			dataStart, dataEnd = vs, ve
		}
	})
	if dataStart < 0 || !peerKinds[kind] {
		return offs
	}
	eachAttr(p, dataStart, dataEnd, func(typ, vs, ve int) {
		if typ == peerInfoAttr {
			offs = linkFdOffsets(p, vs+unix.SizeofIfInfomsg, ve, offs, false)
		}
	})
	return offs
}

// tcFdOffsets walks a tc filter's attributes: a "bpf" filter's options
// may name its program by descriptor.
func tcFdOffsets(p []byte, start, end int, offs []int) []int {
	var kind string
	optStart, optEnd := -1, -1
	eachAttr(p, start, end, func(typ, vs, ve int) {
		switch typ {
		case unix.TCA_KIND:
			kind = string(bytes.TrimRight(p[vs:ve], "\x00"))
		case unix.TCA_OPTIONS:
			optStart, optEnd = vs, ve
		}
	})
	if kind == "bpf" && optStart >= 0 {
		eachAttr(p, optStart, optEnd, func(typ, vs, ve int) {
			offs = appendFd(offs, typ == tcaBPFFd, vs, ve)
		})
	}
	return offs
}

func appendFd(offs []int, is bool, vs, ve int) []int {
	if is && ve-vs >= 4 {
		offs = append(offs, vs)
	}
	return offs
}

// eachAttr calls f with the type and the value's bounds of each
// attribute in p[start:end], up to the first malformed one.
func eachAttr(p []byte, start, end int, f func(typ, vs, ve int)) {
	if start < 0 || end > len(p) {
		return
	}
	ne := binary.NativeEndian
	for off := start; off+unix.SizeofRtAttr <= end; {
		n := int(ne.Uint16(p[off:]))
		if n < unix.SizeofRtAttr || n > end-off {
			return
		}
		f(int(ne.Uint16(p[off+2:])&nlaTypeMask), off+unix.SizeofRtAttr, off+n)
		off += (n + unix.NLA_ALIGNTO - 1) &^ (unix.NLA_ALIGNTO - 1)
	}
}
