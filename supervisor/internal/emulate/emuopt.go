package emulate

import (
	"github.com/nettrap/nettrap/bpf"
	"github.com/nettrap/nettrap/supervisor/internal/rawsock"
)

// maxOptval bounds the option value an emulated setsockopt passes: every
// option the supervisor sets reads a struct of at most 264 bytes
// (struct group_source_req), and each one that checks optlen against a
// size refuses a length above 512 just as it refuses the original one.
const maxOptval = 512

// emulableOpt tells whether c is a setsockopt the supervisor sets itself
// when it is allowed: an interface pin (to lo or to none) or a multicast
// join (on lo, or opened by a rule or the marker). Once allowed, the
// kernel would read the value again, and a second thread could change
// it in between (pin the socket to the real interface after nettrap saw
// lo). Source routes are always denied. A netfilter table write is left
// to the kernel: it acts only on a namespace the caller holds
// CAP_NET_ADMIN over, which the kernel checks itself (docs/threat-model.md,
// "Nothing nettrap checked is read again").
func emulableOpt(c *Call) bool {
	if !c.Opt.Settable {
		return false
	}
	o, ok := bpf.LookupSockOpt(uint32(c.Args[1]), uint32(c.Args[2]))
	return ok && (o.Effect == bpf.PinOpt || o.Effect == bpf.JoinOpt)
}

// setOpt sets the option on the borrowed socket with the bytes read: the
// same level, name and length (up to maxOptval), zeros past what the
// kernel reads. The capability check of SO_BINDTODEVICE on a socket
// already bound (CAP_NET_RAW) is then nettrap's: a target without it can
// move its socket to lo or to no interface, nowhere else.
func setOpt(s *Borrowed, c *Call) Result {
	optlen := c.Opt.Optlen
	if optlen > maxOptval {
		optlen = maxOptval
	}
	var buf [maxOptval]byte
	copy(buf[:], c.Opt.Got)
	errno := rawsock.Setsockopt(s.FD, int(int32(c.Args[1])), int(int32(c.Args[2])), buf[:], int32(optlen))
	return Result{Errno: errno}
}
