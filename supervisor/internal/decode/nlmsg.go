package decode

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/procfs"
	"github.com/nettrap/nettrap/supervisor/internal/namespace"
	"github.com/nettrap/nettrap/supervisor/internal/nlparse"
	"github.com/nettrap/nettrap/supervisor/internal/targetmem"
)

// Netlink sends that name the kernel as their destination.
//
// The socket-file check the capability-free handover relies on (see
// supervisor/netlink.go) is skipped by the kernel when a message carries a
// destination address (netlink_sendmsg sets NETLINK_SKB_DST, and
// __netlink_ns_capable then looks at the sender only). Go's
// syscall.NetlinkRIB, iproute2 and most libraries address the kernel
// explicitly, so those sends are read here: sendto with an address and
// sendmsg are trapped anyway, and their destination is AF_NETLINK. A
// request that changes the namespace is denied when the socket belongs to
// the namespace nettrap started in; the others are sent by the supervisor
// itself from its thread without capabilities (supervisor/netlink.go), so what the
// kernel gets is what was read, and the kernel checks that sender. Where
// the socket cannot be borrowed, or for sendmmsg, the call continues in
// the kernel, which reads it again (the CONTINUE race).

// maxNetlinkPayload bounds what is read of one call's messages. A larger
// payload is judged a change without a look.
const maxNetlinkPayload = 1 << 20

// readNetlinkPayload reads the data of a send whose destination is
// AF_NETLINK: the buffer of a sendto, or the iovecs of a msghdr.
func readNetlinkPayload(m *targetmem.Reader, base uint64, n uint64) ([]byte, unix.Errno) {
	if n > maxNetlinkPayload {
		return nil, 0
	}
	buf := make([]byte, n)
	if err := m.Read(base, buf); err != nil {
		return nil, unix.EFAULT
	}
	return buf, 0
}

// readIovecs reads and concatenates the iovecs of a msghdr (msg_iov at
// 16, msg_iovlen at 24). ok is false when they are more than
// maxNetlinkPayload bytes.
func readIovecs(m *targetmem.Reader, hdr []byte) (data []byte, ok bool, errno unix.Errno) {
	ne := binary.NativeEndian
	iov, iovlen := ne.Uint64(hdr[16:24]), ne.Uint64(hdr[24:32])
	if iovlen > UioMaxIOV {
		return nil, false, unix.EMSGSIZE
	}
	vec := make([]byte, 16*iovlen)
	if err := m.Read(iov, vec); err != nil {
		return nil, false, unix.EFAULT
	}
	for i := uint64(0); i < iovlen; i++ {
		base, n := ne.Uint64(vec[16*i:]), ne.Uint64(vec[16*i+8:])
		if n > maxNetlinkPayload || uint64(len(data))+n > maxNetlinkPayload {
			return nil, false, 0
		}
		part, errno := readNetlinkPayload(m, base, n)
		if errno != 0 {
			return nil, false, errno
		}
		data = append(data, part...)
	}
	return data, true, 0
}

// NetlinkSend is what a netlink send to the kernel asked for: one entry
// per message that names an AF_NETLINK destination.
type NetlinkSend struct {
	Payloads [][]byte // nil for a message too large to read
	Dests    []unix.SockaddrNetlink
	Control  bool // some message carries control data
	Oversize bool
	Sock     int // the socket borrowed from the target, or -1
}

// netlinkRequest tells whether the call sends netlink messages that name
// a destination on a socket of the namespace nettrap started in (ours),
// and names the first request among them that changes that namespace
// ("RTM_NEWROUTE", "nfnetlink message …"), "" when none does
// (Call.NetlinkOurs, Call.NetlinkChange).
func (c *Call) netlinkRequest() (ours bool, change string) {
	n := c.Netlink
	proto, ours := c.netlinkProtocol(int(int32(c.Args[0])))
	switch {
	case !ours:
		return false, ""
	case n.Oversize:
		return true, fmt.Sprintf("netlink message over %d bytes", maxNetlinkPayload)
	case proto < 0:
		// Ours, but its protocol could not be learnt: strict.
		return true, "netlink message on a socket of unknown protocol"
	}
	for _, p := range n.Payloads {
		if change = nlparse.ChangeRequest(proto, p); change != "" {
			return true, change
		}
	}
	return true, ""
}

// netlinkProtocol tells the protocol of the netlink socket at fd, and
// whether it belongs to the starting namespace (ok). It borrows the
// socket; where that is refused it looks the socket's inode up in the
// calling thread's /proc/TID/net/netlink, which lists the thread's
// namespace only.
func (c *Call) netlinkProtocol(fd int) (proto int, ok bool) {
	if c.Netns != nil && c.Netns.Cookie != 0 {
		if proto, cookie, err := c.borrowedProtocol(fd); err == nil {
			return proto, cookie == c.Netns.Cookie
		}
	}
	proto, found := procfs.NetlinkProtocol(c.TID, fd)
	if !found {
		// Not a netlink socket of the thread's namespace. From the
		// starting namespace that means another one's; from another
		// namespace it cannot be told, and the strict answer is ours.
		return -1, !c.inStartingNetns()
	}
	return proto, c.inStartingNetns()
}

// borrowedProtocol borrows the socket and asks it. The copy is kept in
// c.netlink for the send (see sendCapless) and closed with the call.
func (c *Call) borrowedProtocol(fd int) (proto int, cookie uint64, err error) {
	sfd, err := c.borrow(fd)
	if err != nil {
		return 0, 0, err
	}
	if d, err := unix.GetsockoptInt(sfd, unix.SOL_SOCKET, unix.SO_DOMAIN); err != nil || d != unix.AF_NETLINK {
		// Not a netlink socket (or not a socket): the kernel refuses a
		// netlink address there, so it is nobody's namespace (cookie 0).
		unix.Close(sfd)
		return -1, 0, err
	}
	if proto, err = unix.GetsockoptInt(sfd, unix.SOL_SOCKET, unix.SO_PROTOCOL); err == nil {
		cookie, err = namespace.SocketCookie(sfd)
	}
	if err != nil {
		unix.Close(sfd)
		return 0, 0, err
	}
	c.Netlink.Sock = sfd
	return proto, cookie, nil
}

// Release closes what the call borrowed from the target.
func (c *Call) Release() {
	if c.Netlink != nil && c.Netlink.Sock >= 0 {
		unix.Close(c.Netlink.Sock)
		c.Netlink.Sock = -1
	}
}
