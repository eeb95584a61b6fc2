package decode

import (
	"encoding/binary"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/bpf"
	"github.com/nettrap/nettrap/classify"
	"github.com/nettrap/nettrap/supervisor/internal/targetmem"
)

// ReadDests reads the destinations a call names from the stopped target,
// mirroring what the kernel itself will copy in, so that what is checked is
// what the kernel would use. Failures give the errno the kernel would give
// for the same arguments.
func ReadDests(m *targetmem.Reader, c *Call) ([]classify.Dest, unix.Errno) {
	a := c.Args
	switch c.Syscall.Kind {
	case bpf.Connect:
		d, raw, errno := readSockaddr(m, a[1], int64(int32(a[2])), classify.OpConnect, c.name1[:])
		c.Msgs = c.oneMsg(RawMsg{Name: raw})
		return c.oneDest(d, errno)
	case bpf.SendTo:
		if a[4] == 0 { // the BPF program lets these through; be safe anyway
			c.Msgs = c.oneMsg(RawMsg{})
			return nil, 0
		}
		d, raw, payload, errno := readSendTo(m, c)
		c.Msgs = c.oneMsg(RawMsg{Name: raw, Payload: payload})
		if errno == 0 && present(d) && d.Family == unix.AF_NETLINK {
			errno = c.addNetlinkPayload(m, a[1], a[2], a[4])
		}
		return c.oneDest(d, errno)
	case bpf.SendMsg:
		return readMsgDests(m, c, a[1], 1, SizeofMsghdr)
	case bpf.SendMMsg:
		vlen := uint32(a[2])
		if vlen > UioMaxIOV {
			vlen = UioMaxIOV // __sys_sendmmsg clamps rather than fails
		}
		return readMsgDests(m, c, a[1], int(vlen), SizeofMmsghdr)
	case bpf.SetSockOpt:
		return nil, readSockOpt(m, c)
	case bpf.Ioctl:
		c.Request = ioctlName(a[1])
	case bpf.BPF:
		return nil, readAttachType(m, c)
	}
	return nil, 0
}

// addNetlinkPayload keeps the data of a sendto addressed to AF_NETLINK
// (see nlmsg.go), and its address.
func (c *Call) addNetlinkPayload(m *targetmem.Reader, base, n, name uint64) unix.Errno {
	if n > maxNetlinkPayload {
		return c.addNetlinkMsg(m, name, nil, false, true)
	}
	b, errno := readNetlinkPayload(m, base, n)
	if errno != 0 {
		return errno
	}
	return c.addNetlinkMsg(m, name, b, false, false)
}

// addNetlinkIovecs does the same for a message header of sendmsg or
// sendmmsg.
func (c *Call) addNetlinkIovecs(m *targetmem.Reader, raw []byte, h msghdr) unix.Errno {
	b, ok, errno := readIovecs(m, raw)
	if errno != 0 {
		return errno
	}
	return c.addNetlinkMsg(m, h.name, b, h.controllen > 0, !ok)
}

// addNetlinkMsg records one message: its destination (read again here:
// it was checked to be a whole sockaddr_nl already), its data, and
// whether it has control data or was too large to read.
func (c *Call) addNetlinkMsg(m *targetmem.Reader, name uint64, data []byte, control, oversize bool) unix.Errno {
	sa := make([]byte, SizeofSockaddrNetlink)
	if m.Read(name, sa) != nil {
		return unix.EFAULT
	}
	if c.Netlink == nil {
		c.Netlink = &NetlinkSend{Sock: -1}
	}
	n := c.Netlink
	n.Control = n.Control || control
	n.Oversize = n.Oversize || oversize
	n.Dests = append(n.Dests, unix.SockaddrNetlink{Family: unix.AF_NETLINK,
		Pid: binary.NativeEndian.Uint32(sa[4:]), Groups: binary.NativeEndian.Uint32(sa[8:])})
	n.Payloads = append(n.Payloads, data)
	return 0
}

func ioctlName(req uint64) string {
	if name, ok := bpf.LookupNetnsIoctl(req); ok {
		return name
	}
	return "request " + strconv.FormatUint(uint64(uint32(req)), 16)
}

// Offsets in union bpf_attr: attach_type sits at 8 in both the
// BPF_PROG_ATTACH and the BPF_LINK_CREATE members.
const (
	bpfAttachTypeOff = 8
	bpfAttrPageSize  = 4096 // bpf_check_uarg_tail_zero: larger is E2BIG
)

// readAttachType follows __sys_bpf: size bytes of attr are copied
// (at most the kernel's union; the rest reads as zero), so an attr
// shorter than 12 bytes has attach_type 0.
func readAttachType(m *targetmem.Reader, c *Call) unix.Errno {
	size := uint32(c.Args[2])
	if size > bpfAttrPageSize {
		return unix.E2BIG
	}
	buf := make([]byte, bpfAttachTypeOff+4)
	n := min(size, uint32(len(buf)))
	if n > 0 && m.Read(c.Args[1], buf[:n]) != nil {
		return unix.EFAULT
	}
	c.AttachType = binary.NativeEndian.Uint32(buf[bpfAttachTypeOff:])
	return 0
}

// oneDest returns d as the call's one destination, in c's own storage.
func (c *Call) oneDest(d classify.Dest, errno unix.Errno) ([]classify.Dest, unix.Errno) {
	if errno != 0 || !present(d) {
		return nil, errno
	}
	c.dest1[0] = d
	return c.dest1[:], 0
}

// present: d is a destination that was read (a sockaddr, or none at
// all), not the zero Dest that stands for no address given.
func present(d classify.Dest) bool { return d.Family != 0 || d.NoDest }

// oneMsg returns m as c's one message, in c's own storage.
func (c *Call) oneMsg(m RawMsg) []RawMsg {
	c.msg1[0] = m
	return c.msg1[:]
}

// readSendTo reads a sendto's address, and where the call may be
// emulated its payload too, in the same process_vm_readv: a syscall less,
// and the ID_VALID that follows covers the payload as well, so the
// emulated send need not check again (supervisor/emusock.go). A payload over a
// datagram's size, or any failure, reads the address alone, as the kernel
// would: the payload is then read when the call is made.
func readSendTo(m *targetmem.Reader, c *Call) (classify.Dest, []byte, []byte, unix.Errno) {
	a := c.Args
	n := int64(int32(a[5]))
	if m.Prefetch && n > 0 && n <= sizeofSockaddrStorage && a[2] > 0 && a[2] <= MaxDatagram {
		name := c.name1[:n]
		p := GetPayloadBuf(int(a[2]), true)
		if m.ReadScatter([]targetmem.Part{{Addr: a[4], Buf: name}, {Addr: a[1], Buf: p}}) {
			d, raw, errno := parseSockaddr(name, classify.OpSend)
			if errno != 0 {
				PutPayloadBuf(p)
				return d, nil, nil, errno
			}
			return d, raw, p, 0
		}
		PutPayloadBuf(p)
	}
	d, raw, errno := readSockaddr(m, a[4], n, classify.OpSend, c.name1[:])
	return d, raw, nil, errno
}

// readSockaddr follows move_addr_to_kernel: a negative or oversized length
// is EINVAL, zero means no address, an unreadable buffer is EFAULT. It
// returns the bytes read too: an emulated call uses them, not the
// target's memory, which another thread may have changed since. They are
// read into store (sizeofSockaddrStorage bytes: the call's own storage,
// for its one address), or into new memory if store is nil. A Dest that
// is not present means no destination (with errno, none could be read).
func readSockaddr(m *targetmem.Reader, addr uint64, n int64, op classify.Op, store []byte) (classify.Dest, []byte, unix.Errno) {
	if n < 0 || n > sizeofSockaddrStorage {
		return classify.Dest{}, nil, unix.EINVAL
	}
	if n == 0 {
		// No address at all: connect fails in the protocol (EINVAL); a
		// send uses the connected peer, if any.
		if op == classify.OpConnect {
			return classify.Dest{}, nil, unix.EINVAL
		}
		return classify.Dest{NoDest: true}, nil, 0
	}
	var buf []byte
	if store != nil {
		buf = store[:n:n]
	} else {
		buf = make([]byte, n)
	}
	if err := m.Read(addr, buf); err != nil {
		return classify.Dest{}, nil, unix.EFAULT
	}
	return parseSockaddr(buf, op)
}

// parseSockaddr is readSockaddr's after the read: buf's destination.
func parseSockaddr(buf []byte, op classify.Op) (classify.Dest, []byte, unix.Errno) {
	d, err := classify.Parse(buf, op)
	if err != nil {
		// Truncated for its family, or too long: the kernel says EINVAL.
		return classify.Dest{}, nil, unix.EINVAL
	}
	return d, buf, 0
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
func readMsgDests(m *targetmem.Reader, c *Call, vec uint64, count, stride int) ([]classify.Dest, unix.Errno) {
	var hdrs []byte
	if count == 1 && stride <= len(c.hdr1) {
		hdrs = c.hdr1[:stride] // every sendmsg: the call's own storage
	} else {
		hdrs = make([]byte, count*stride)
	}
	if err := m.Read(vec, hdrs); err != nil {
		// Some header is unreadable: find the first one.
		hdrs = hdrs[:0]
		for i := 0; i < count; i++ {
			one := make([]byte, stride)
			if m.Read(vec+uint64(i*stride), one) != nil {
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
	if count == 1 {
		// One message (every sendmsg): the call's own storage.
		dests, c.Msgs = c.dest1[:0], c.msg1[:0]
	}
	for i := 0; i < count; i++ {
		h := parseMsghdr(hdrs[i*stride:])
		var store, ctlStore []byte
		var pre preread
		if count == 1 {
			store, ctlStore = c.name1[:], c.ctl1[:]
			pre = c.prereadMsg(m, h)
		}
		d, name, errno := readMsgName(m, h, store, pre.name)
		var ctl control
		if errno == 0 {
			ctl, errno = readControl(m, h, ctlStore, pre.ctl)
			c.SourceRoute = c.SourceRoute || ctl.sourceRoute
			c.Pin = firstPin(c.Pin, ctl.pin)
		}
		if errno == 0 && present(d) && d.Family == unix.AF_NETLINK {
			errno = c.addNetlinkIovecs(m, hdrs[i*stride:], h)
		}
		if errno != 0 {
			if i == 0 {
				return nil, errno
			}
			break
		}
		if present(d) {
			dests = append(dests, d)
		}
		c.Msgs = append(c.Msgs, RawMsg{Name: name, Control: ctl.raw, Iov: h.iov, Iovlen: h.iovlen})
		if count == 1 && c.Syscall.Kind == bpf.SendMsg && m.Prefetch && inet(d) {
			c.Msgs[0].Payload = c.prefetchMsgPayload(m, h, pre.iov)
		}
	}
	if len(dests) == 0 {
		dests = nil // as without the call's storage
	}
	return dests, 0
}

// maxPrefetchIov is the most vectors a sendmsg may have for its payload
// to be read before the notification is checked (quic-go sends one).
const maxPrefetchIov = 4

// sizeofIovec is sizeof(struct iovec) on the 64-bit ABIs, whose calls
// alone are emulated.
const sizeofIovec = 16

// inet: d names an IPv4 or IPv6 destination.
func inet(d classify.Dest) bool {
	return present(d) && (d.Family == unix.AF_INET || d.Family == unix.AF_INET6)
}

// prefetchMsgPayload reads an inet sendmsg's payload with its header,
// before the notification is checked, as readSendTo does a sendto's: the
// ID_VALID that follows covers it, so the emulated send needs neither a
// second check nor the socket's type (supervisor/internal/emulate's
// sendPrefetched). It returns nil, and the payload is read when the call
// is made, for more than maxPrefetchIov vectors, more than a datagram, an
// empty payload, or any failure: the send then fails as the kernel's
// would.
func (c *Call) prefetchMsgPayload(m *targetmem.Reader, h msghdr, have bool) []byte {
	if h.iovlen == 0 || h.iovlen > maxPrefetchIov {
		return nil
	}
	raw := c.iov1[:h.iovlen*sizeofIovec]
	if !have && m.Read(h.iov, raw) != nil {
		return nil
	}
	remote := c.riov1[:0]
	var total uint64
	for i := range int(h.iovlen) {
		base := binary.NativeEndian.Uint64(raw[i*sizeofIovec:])
		n := binary.NativeEndian.Uint64(raw[i*sizeofIovec+8:])
		if n > MaxDatagram || total+n > MaxDatagram {
			return nil // or a negative length: the send says which
		}
		if n > 0 {
			remote = append(remote, unix.RemoteIovec{Base: uintptr(base), Len: int(n)})
			total += n
		}
	}
	if total == 0 {
		return nil
	}
	p := GetPayloadBuf(int(total), true)
	if !m.ReadGather(remote, p) {
		PutPayloadBuf(p)
		return nil
	}
	return p
}

// preread says which of a sendmsg's parts prereadMsg read.
type preread struct{ name, ctl, iov bool }

// prereadMsg reads a sendmsg's address, its control data and, where its
// payload may be read before the check (prefetchMsgPayload), its iovec
// array, all in one process_vm_readv, into the call's own storage: each
// that is there and of a size that storage takes. It reads nothing
// unless two or more are, or if any fails: each is then read on its own,
// which tells the kernel's errno apart.
func (c *Call) prereadMsg(m *targetmem.Reader, h msghdr) preread {
	var parts [3]targetmem.Part
	var pre preread
	k := 0
	if h.name != 0 && h.namelen > 0 {
		parts[k] = targetmem.Part{Addr: h.name, Buf: c.name1[:min(h.namelen, sizeofSockaddrStorage)]}
		pre.name, k = true, k+1
	}
	if h.control != 0 && h.controllen >= SizeofCmsghdr && h.controllen <= uint64(len(c.ctl1)) {
		parts[k] = targetmem.Part{Addr: h.control, Buf: c.ctl1[:h.controllen]}
		pre.ctl, k = true, k+1
	}
	if m.Prefetch && c.Syscall.Kind == bpf.SendMsg && h.iovlen > 0 && h.iovlen <= maxPrefetchIov {
		parts[k] = targetmem.Part{Addr: h.iov, Buf: c.iov1[:h.iovlen*sizeofIovec]}
		pre.iov, k = true, k+1
	}
	if k < 2 || !m.ReadScatter(parts[:k]) {
		return preread{}
	}
	return pre
}

func readMsgName(m *targetmem.Reader, h msghdr, store []byte, have bool) (classify.Dest, []byte, unix.Errno) {
	if h.name == 0 || h.namelen == 0 {
		return classify.Dest{}, nil, 0
	}
	if h.namelen < 0 {
		return classify.Dest{}, nil, unix.EINVAL
	}
	n := min(h.namelen, sizeofSockaddrStorage)
	if have { // read by prereadMsg, into store
		return parseSockaddr(store[:n:n], classify.OpSend)
	}
	return readSockaddr(m, h.name, int64(n), classify.OpSend, store)
}

// RawMsg is one message as the decision saw it: the address and control
// bytes as read, and where the payload lies in the target (sendmsg and
// sendmmsg; connect and sendto keep only name).
type RawMsg struct {
	Name, Control []byte
	Iov, Iovlen   uint64
	// Payload of a sendto or an inet sendmsg, read with its address
	// before the notification was checked (readSendTo,
	// prefetchMsgPayload); nil: read it when sending.
	Payload []byte
}
