package nlparse

import (
	"encoding/binary"
	"fmt"
	"strconv"

	"golang.org/x/sys/unix"
)

// ChangeRequest walks the messages of one send, as netlink_rcv_skb does
// (a malformed header ends the walk there), and names the first request
// that needs CAP_NET_ADMIN to change something:
//   - rtnetlink: every request but the GET kind (type & 3 == 2), which is
//     the kernel's own rule (rtnetlink_rcv_msg);
//   - nfnetlink (nf_tables, conntrack, …) and xfrm: every request (the
//     kernel asks the capability of reads too);
//   - generic netlink: every request to a family other than the
//     controller (whose requests are lookups): the admin flags of a
//     family's commands are not known here.
//
// Other protocols (sock_diag, audit, uevents, …) change no routing.
func ChangeRequest(proto int, b []byte) string {
	ne := binary.NativeEndian
	for len(b) >= unix.NLMSG_HDRLEN {
		n := int(ne.Uint32(b[0:4]))
		typ, flags := ne.Uint16(b[4:6]), ne.Uint16(b[6:8])
		if n < unix.NLMSG_HDRLEN || n > len(b) {
			return ""
		}
		if flags&unix.NLM_F_REQUEST != 0 && typ >= unix.NLMSG_MIN_TYPE {
			if name := changeOf(proto, typ); name != "" {
				return name
			}
		}
		n = (n + unix.NLMSG_ALIGNTO - 1) &^ (unix.NLMSG_ALIGNTO - 1)
		if n >= len(b) {
			return ""
		}
		b = b[n:]
	}
	return ""
}

func changeOf(proto int, typ uint16) string {
	switch proto {
	case unix.NETLINK_ROUTE:
		if typ&3 == 2 {
			return ""
		}
		if name, ok := rtmNames[typ]; ok {
			return name
		}
		return "rtnetlink message " + strconv.Itoa(int(typ))
	case unix.NETLINK_NETFILTER:
		return fmt.Sprintf("nfnetlink message (subsystem %d, type %d)", typ>>8, typ&0xff)
	case unix.NETLINK_XFRM:
		return "xfrm message " + strconv.Itoa(int(typ))
	case unix.NETLINK_GENERIC:
		if typ == unix.GENL_ID_CTRL {
			return ""
		}
		return "generic netlink family " + strconv.Itoa(int(typ))
	}
	return ""
}

// rtmNames names the rtnetlink changes tests meet most.
var rtmNames = map[uint16]string{
	unix.RTM_NEWLINK: "RTM_NEWLINK", unix.RTM_DELLINK: "RTM_DELLINK", unix.RTM_SETLINK: "RTM_SETLINK",
	unix.RTM_NEWADDR: "RTM_NEWADDR", unix.RTM_DELADDR: "RTM_DELADDR",
	unix.RTM_NEWROUTE: "RTM_NEWROUTE", unix.RTM_DELROUTE: "RTM_DELROUTE",
	unix.RTM_NEWNEIGH: "RTM_NEWNEIGH", unix.RTM_DELNEIGH: "RTM_DELNEIGH",
	unix.RTM_NEWRULE: "RTM_NEWRULE", unix.RTM_DELRULE: "RTM_DELRULE",
	unix.RTM_NEWQDISC: "RTM_NEWQDISC", unix.RTM_DELQDISC: "RTM_DELQDISC",
	unix.RTM_NEWTFILTER: "RTM_NEWTFILTER", unix.RTM_DELTFILTER: "RTM_DELTFILTER",
	unix.RTM_NEWACTION: "RTM_NEWACTION", unix.RTM_DELACTION: "RTM_DELACTION",
	unix.RTM_NEWNSID: "RTM_NEWNSID", unix.RTM_NEWNEXTHOP: "RTM_NEWNEXTHOP",
}
