package nlparse

import (
	"encoding/binary"
	"testing"

	"golang.org/x/sys/unix"
)

// nlmsg builds one netlink message with a body of n zero bytes, padded to
// the netlink alignment.
func nlmsg(typ, flags uint16, n int) []byte {
	b := make([]byte, unix.NLMSG_HDRLEN+n, (unix.NLMSG_HDRLEN+n+3)&^3)
	binary.NativeEndian.PutUint32(b[0:], uint32(len(b)))
	binary.NativeEndian.PutUint16(b[4:], typ)
	binary.NativeEndian.PutUint16(b[6:], flags)
	return b[:cap(b)]
}

func concat(msgs ...[]byte) []byte {
	var b []byte
	for _, m := range msgs {
		b = append(b, m...)
	}
	return b
}

// TestChangeRequest: the rtnetlink GET kind is a read; every other
// rtnetlink request is a change; nfnetlink and xfrm requests are all
// changes; generic netlink is a change unless it goes to the controller;
// messages that are not requests, or follow a malformed header, are not
// looked at (the kernel does not process them either).
func TestChangeRequest(t *testing.T) {
	req := uint16(unix.NLM_F_REQUEST | unix.NLM_F_ACK)
	dump := uint16(unix.NLM_F_REQUEST | unix.NLM_F_DUMP)
	malformed := nlmsg(unix.RTM_GETLINK, dump, 4)
	binary.NativeEndian.PutUint32(malformed[0:], 8) // shorter than a header
	tests := []struct {
		name  string
		proto int
		b     []byte
		want  string
	}{
		{"getlink dump", unix.NETLINK_ROUTE, nlmsg(unix.RTM_GETLINK, dump, 16), ""},
		{"getroute dump", unix.NETLINK_ROUTE, nlmsg(unix.RTM_GETROUTE, dump, 12), ""},
		{"getaddr then getroute", unix.NETLINK_ROUTE, concat(nlmsg(unix.RTM_GETADDR, dump, 8), nlmsg(unix.RTM_GETROUTE, dump, 12)), ""},
		{"newroute", unix.NETLINK_ROUTE, nlmsg(unix.RTM_NEWROUTE, req, 12), "RTM_NEWROUTE"},
		{"setlink", unix.NETLINK_ROUTE, nlmsg(unix.RTM_SETLINK, req, 16), "RTM_SETLINK"},
		{"newtfilter", unix.NETLINK_ROUTE, nlmsg(unix.RTM_NEWTFILTER, req, 20), "RTM_NEWTFILTER"},
		{"get then newaddr", unix.NETLINK_ROUTE, concat(nlmsg(unix.RTM_GETLINK, dump, 16), nlmsg(unix.RTM_NEWADDR, req, 8)), "RTM_NEWADDR"},
		{"unaligned body", unix.NETLINK_ROUTE, concat(nlmsg(unix.RTM_GETLINK, dump, 5), nlmsg(unix.RTM_DELROUTE, req, 12)), "RTM_DELROUTE"},
		{"unnamed type", unix.NETLINK_ROUTE, nlmsg(unix.RTM_NEWCACHEREPORT, req, 4), "rtnetlink message 96"},
		{"not a request", unix.NETLINK_ROUTE, nlmsg(unix.RTM_NEWROUTE, 0, 12), ""},
		{"control type", unix.NETLINK_ROUTE, nlmsg(unix.NLMSG_NOOP, req, 0), ""},
		{"malformed first", unix.NETLINK_ROUTE, concat(malformed, nlmsg(unix.RTM_NEWROUTE, req, 12)), ""},
		{"truncated", unix.NETLINK_ROUTE, nlmsg(unix.RTM_NEWROUTE, req, 12)[:10], ""},
		{"nftables", unix.NETLINK_NETFILTER, nlmsg(10<<8|6, req, 4), "nfnetlink message (subsystem 10, type 6)"},
		{"xfrm", unix.NETLINK_XFRM, nlmsg(0x10, req, 4), "xfrm message 16"},
		{"genl controller", unix.NETLINK_GENERIC, nlmsg(unix.GENL_ID_CTRL, req, 4), ""},
		{"genl family", unix.NETLINK_GENERIC, nlmsg(0x20, req, 4), "generic netlink family 32"},
		{"sock_diag", unix.NETLINK_SOCK_DIAG, nlmsg(unix.SOCK_DIAG_BY_FAMILY, dump, 56), ""},
	}
	for _, tt := range tests {
		if got := ChangeRequest(tt.proto, tt.b); got != tt.want {
			t.Errorf("%s: changeRequest = %q, want %q", tt.name, got, tt.want)
		}
	}
}
