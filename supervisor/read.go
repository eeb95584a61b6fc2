package supervisor

import (
	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/bpf"
	"github.com/nettrap/nettrap/classify"
)

// readDests reads the destinations a call names from the stopped target,
// mirroring what the kernel itself will copy in, so that what is checked is
// what the kernel would use. Failures give the errno the kernel would give
// for the same arguments.
func readDests(m *memReader, c *Call) ([]classify.Dest, unix.Errno) {
	a := c.Args
	switch c.Syscall.Kind {
	case bpf.Connect:
		d, raw, errno := readSockaddr(m, a[1], int64(int32(a[2])), classify.OpConnect)
		c.msgs = []rawMsg{{name: raw}}
		return oneDest(d, errno)
	case bpf.SendTo:
		if a[4] == 0 { // the BPF program lets these through; be safe anyway
			c.msgs = []rawMsg{{}}
			return nil, 0
		}
		d, raw, errno := readSockaddr(m, a[4], int64(int32(a[5])), classify.OpSend)
		c.msgs = []rawMsg{{name: raw}}
		return oneDest(d, errno)
	case bpf.SendMsg:
		return readMsgDests(m, c, a[1], 1, sizeofMsghdr)
	case bpf.SendMMsg:
		vlen := uint32(a[2])
		if vlen > uioMaxIOV {
			vlen = uioMaxIOV // __sys_sendmmsg clamps rather than fails
		}
		return readMsgDests(m, c, a[1], int(vlen), sizeofMmsghdr)
	case bpf.SetSockOpt:
		return nil, readSockOpt(m, c)
	}
	return nil, 0
}

func oneDest(d *classify.Dest, errno unix.Errno) ([]classify.Dest, unix.Errno) {
	if errno != 0 || d == nil {
		return nil, errno
	}
	return []classify.Dest{*d}, 0
}

// readSockaddr follows move_addr_to_kernel: a negative or oversized length
// is EINVAL, zero means no address, an unreadable buffer is EFAULT. It
// returns the bytes read too: an emulated call uses them, not the
// target's memory, which another thread may have changed since.
func readSockaddr(m *memReader, addr uint64, n int64, op classify.Op) (*classify.Dest, []byte, unix.Errno) {
	if n < 0 || n > sizeofSockaddrStorage {
		return nil, nil, unix.EINVAL
	}
	if n == 0 {
		// No address at all: connect fails in the protocol (EINVAL); a
		// send uses the connected peer, if any.
		if op == classify.OpConnect {
			return nil, nil, unix.EINVAL
		}
		return &classify.Dest{NoDest: true}, nil, 0
	}
	buf := make([]byte, n)
	if err := m.read(addr, buf); err != nil {
		return nil, nil, unix.EFAULT
	}
	d, err := classify.Parse(buf, op)
	if err != nil {
		// Truncated for its family, or too long: the kernel says EINVAL.
		return nil, nil, unix.EINVAL
	}
	return &d, buf, 0
}

// readMsgDests reads count message headers of the given stride at vec and
// the msg_name of each. It follows copy_msghdr_from_user: a NULL name or a
// zero length means no address, a negative length is EINVAL, a length over
// sizeof(sockaddr_storage) is clamped.
//
// sendmmsg stops at the first message it cannot copy and returns how many
// it sent, failing only if that is none. So an unreadable or malformed
// message k > 0 ends the vector there: the kernel will never look past it,
// and the call is decided on messages 0..k-1. At k == 0 the call fails
// with that message's errno, as it would in the kernel.
func readMsgDests(m *memReader, c *Call, vec uint64, count, stride int) ([]classify.Dest, unix.Errno) {
	hdrs := make([]byte, count*stride)
	if err := m.read(vec, hdrs); err != nil {
		// Some header is unreadable: find the first one.
		hdrs = hdrs[:0]
		for i := 0; i < count; i++ {
			one := make([]byte, stride)
			if m.read(vec+uint64(i*stride), one) != nil {
				break
			}
			hdrs = append(hdrs, one...)
		}
		if len(hdrs) == 0 {
			return nil, unix.EFAULT
		}
		count = len(hdrs) / stride
	}
	var dests []classify.Dest
	for i := 0; i < count; i++ {
		h := parseMsghdr(hdrs[i*stride:])
		d, name, errno := readMsgName(m, h)
		var ctl control
		if errno == 0 {
			ctl, errno = readControl(m, h)
			c.SourceRoute = c.SourceRoute || ctl.sourceRoute
			c.Pin = firstPin(c.Pin, ctl.pin)
		}
		if errno != 0 {
			if i == 0 {
				return nil, errno
			}
			break
		}
		if d != nil {
			dests = append(dests, *d)
		}
		c.msgs = append(c.msgs, rawMsg{name: name, control: ctl.raw, iov: h.iov, iovlen: h.iovlen})
	}
	return dests, 0
}

func readMsgName(m *memReader, h msghdr) (*classify.Dest, []byte, unix.Errno) {
	if h.name == 0 || h.namelen == 0 {
		return nil, nil, 0
	}
	if h.namelen < 0 {
		return nil, nil, unix.EINVAL
	}
	return readSockaddr(m, h.name, int64(min(h.namelen, sizeofSockaddrStorage)), classify.OpSend)
}
