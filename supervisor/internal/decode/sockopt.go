package decode

import (
	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/bpf"
	"github.com/nettrap/nettrap/supervisor/internal/sockopt"
	"github.com/nettrap/nettrap/supervisor/internal/targetmem"
)

// readSockOpt decodes a trapped setsockopt the way the kernel will read
// it (do_ip_setsockopt, do_ipv6_setsockopt, sk_setsockopt): it sets what
// the option does in c. An optval the kernel would refuse as too short
// sets nothing: that call fails in the kernel without any effect. An
// unreadable one fails with EFAULT, as in the kernel.
func readSockOpt(m *targetmem.Reader, c *Call) unix.Errno {
	o, ok := bpf.LookupSockOpt(uint32(c.Args[1]), uint32(c.Args[2]))
	if !ok {
		return 0 // the filter sends no other option; nothing to check
	}
	c.Option = o.Label
	optval, optlen := c.Args[3], int64(int32(c.Args[4]))
	// Every option read below reads its value once, through c.opt, which
	// keeps the bytes: an allowed option is then set by the supervisor
	// with those very bytes (supervisor/emuopt.go), never read again by the kernel.
	c.Opt = sockopt.Value{M: m, Optlen: optlen}
	defer func() { c.Opt.M = nil }()
	r := &c.Opt
	switch o.Effect {
	case bpf.SourceRouteOpt:
		c.SourceRoute = true
		return 0
	case bpf.PinOpt:
		pin, errno := sockopt.ReadPin(r, o, optval, optlen)
		c.Pin = pin
		c.Opt.Settable = errno == 0
		return errno
	case bpf.NetfilterOpt:
		// A table or IPVS service of the socket's namespace: which one
		// is decided with the socket (Call.SocketInStartingNetns).
		c.Netfilter = true
		return 0
	case bpf.JoinOpt:
		j, errno := sockopt.ReadJoin(r, o, optval, optlen)
		c.Opt.Settable = errno == 0
		if j.Ifindex != sockopt.LoopbackIndex {
			// A join on lo, named by its index, is announced on lo
			// only: nothing to decide, like a pin to lo.
			c.Group, c.GroupSource = j.Group, j.Source
		}
		return errno
	}
	return 0
}
