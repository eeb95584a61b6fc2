package notify

import (
	"errors"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/bpf"
	"github.com/nettrap/nettrap/decision"
	"github.com/nettrap/nettrap/supervisor/internal/emulate"
	"github.com/nettrap/nettrap/supervisor/internal/unotify"
)

// Netlink sockets in the starting namespace.
//
// Every netlink request that changes a network namespace (rtnetlink
// routes, addresses and links, nf_tables, tc, xfrm, genetlink admin
// commands) is checked twice by the kernel: the sender needs
// CAP_NET_ADMIN, and so does the socket's file, with the credentials it
// was opened with (netlink_net_capable -> file_ns_capable). Dumps and gets
// are not checked. So when a confined thread of the starting namespace
// asks for a netlink socket, the supervisor creates it on a thread that
// holds no capability at all and hands it over with
// SECCOMP_IOCTL_NOTIF_ADDFD (SECCOMP_ADDFD_FLAG_SEND, 5.14+). Whatever
// the target is, every change through that socket fails with EPERM in
// its ack, while net.Interfaces, `ip addr` and other reads work.
//
// A change written to such a socket is a write(2), which seccomp does not
// see: it cannot be audited, only refused. The handovers are counted.
//
// The file check is skipped for a message that names its destination
// (NETLINK_SKB_DST: the kernel then checks the sender only), and most
// programs name the kernel. Those sends are trapped anyway (sendto with
// an address, sendmsg): nlmsg.go reads them, the guard denies the
// changes it sees, and sendCapless makes the rest from the
// capability-free thread, so the kernel checks a sender without
// capabilities and gets exactly the bytes that were checked.

// capless answers a call the decider wants made without capabilities:
// a netlink socket(2) is handed over, a netlink send made by the
// supervisor. It returns false, without answering, when that cannot be
// done; the call then continues in the kernel, as before.
func (l *Engine) capless(c *emulate.Call) bool {
	if l.capMaker == nil {
		return false
	}
	switch c.Syscall.Kind {
	case bpf.Socket:
		// Only netlink: the thread makes no other family.
		return int32(c.Args[0]) == unix.AF_NETLINK && !l.noAddfd.Load() && l.handOver(c)
	case bpf.SendTo, bpf.SendMsg:
		return l.sendCapless(c)
	}
	return false
}

// handOver answers a socket(2) call with a socket made on the
// capability-free thread, installed in the target by the kernel (ADDFD
// with SEND, so the call returns the new descriptor). It returns false,
// without answering, only when the kernel cannot do that (before 5.14):
// the caller then lets the call continue, as before.
func (l *Engine) handOver(c *emulate.Call) bool {
	typ := int(int32(c.Args[1]))
	fd, err := l.capMaker.NetlinkSocket(typ, int(int32(c.Args[2])))
	if err != nil {
		// The kernel's own answer to these arguments (EPROTONOSUPPORT,
		// EINVAL, EMFILE…): the target gets it.
		l.answer(c, decision.Deny(emulate.ErrnoOf(err)))
		return true
	}
	defer unix.Close(fd)
	a := unotify.Addfd{ID: c.ID, Flags: unix.SECCOMP_ADDFD_FLAG_SEND, Srcfd: uint32(fd)}
	if typ&unix.SOCK_CLOEXEC != 0 {
		a.NewfdFlags = unix.O_CLOEXEC
	}
	_, err = unotify.AddFD(l.listener, &a)
	switch {
	case err == nil:
		l.stats.Allowed.Add(1)
		l.stats.CaplessNetlink.Add(1)
		return true
	case errors.Is(err, unix.ENOENT):
		l.stats.Vanished.Add(1)
		return true
	case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOTTY):
		if l.noAddfd.CompareAndSwap(false, true) {
			l.report(errors.New("this kernel cannot hand a socket over (SECCOMP_ADDFD_FLAG_SEND needs Linux 5.14): " +
				"netlink sockets are created by the target itself, so changes to the network namespace nettrap started in are not refused"))
		}
		return false
	}
	// EMFILE and the like: the install failed in the target, which still
	// waits; it gets the errno.
	l.answer(c, decision.Deny(emulate.ErrnoOf(err)))
	return true
}

// sendCapless makes a netlink send that names the kernel (sendto, or a
// sendmsg without control data) itself: it borrows the target's socket
// and sends the bytes it read and checked, to the address it read, from
// the capability-free thread. The kernel checks the sender of a message
// with a destination, so every change is refused, whatever the target
// writes into its buffer after the check; the answer is the kernel's
// (the byte count, or its errno). Where the socket cannot be borrowed
// (pidfd_getfd refused) the call continues in the kernel, decided on
// what was read.
func (l *Engine) sendCapless(c *emulate.Call) bool {
	val, errno, ok := emulate.SendCapless(l.capMaker, c)
	switch {
	case !ok:
		return false
	case errno != 0:
		l.answer(c, decision.Deny(errno))
	default:
		l.stats.CaplessNetlink.Add(1)
		l.answerValue(c, val)
	}
	return true
}
