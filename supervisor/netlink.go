package supervisor

import (
	"errors"
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/bpf"
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
// The change itself is a write of a netlink message, which seccomp does
// not see: it cannot be audited, only refused. The handovers are counted.

// caplessMaker creates sockets on one locked OS thread whose capability
// sets are empty. Linux credentials are per thread: capset acts on the
// calling thread only, and the thread is never unlocked, so no other
// goroutine ever runs without capabilities; it exits when the maker is
// closed.
type caplessMaker struct {
	reqs chan func()
}

// newCaplessMaker starts the thread. netnsFD, when not -1, is the
// namespace the sockets must belong to: the thread enters it if it is not
// there already (Go may start the thread from any other).
func newCaplessMaker(netns nsID, netnsFD int) (*caplessMaker, error) {
	m := &caplessMaker{reqs: make(chan func())}
	ready := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// No UnlockOSThread: the thread holds no capabilities and must
		// die with this goroutine.
		if err := enterNetns(netns, netnsFD); err != nil {
			ready <- err
			return
		}
		if err := dropCapabilities(); err != nil {
			ready <- err
			return
		}
		ready <- nil
		for f := range m.reqs {
			f()
		}
	}()
	if err := <-ready; err != nil {
		return nil, fmt.Errorf("capability-free socket thread: %w", err)
	}
	return m, nil
}

func enterNetns(want nsID, fd int) error {
	id, err := nsOf("/proc/thread-self/ns/net")
	if err != nil {
		return err
	}
	if id == want {
		return nil
	}
	if fd < 0 {
		return errors.New("not in the starting network namespace")
	}
	return os.NewSyscallError("setns", unix.Setns(fd, unix.CLONE_NEWNET))
}

// dropCapabilities empties the calling thread's effective, permitted and
// inheritable sets (the ambient set goes with the permitted one), then
// checks that the kernel agrees.
func dropCapabilities() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return os.NewSyscallError("capset", err)
	}
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return os.NewSyscallError("capget", err)
	}
	for _, d := range data {
		if d.Effective|d.Permitted|d.Inheritable != 0 {
			return errors.New("capset left capabilities on the thread")
		}
	}
	return nil
}

// do runs f on the capability-free thread and waits for it.
func (m *caplessMaker) do(f func()) {
	done := make(chan struct{})
	m.reqs <- func() { f(); close(done) }
	<-done
}

// socket creates a socket on the capability-free thread; the caller owns
// the descriptor (close-on-exec).
func (m *caplessMaker) socket(domain, typ, proto int) (fd int, err error) {
	m.do(func() { fd, err = unix.Socket(domain, typ|unix.SOCK_CLOEXEC, proto) })
	return fd, err
}

func (m *caplessMaker) close() { close(m.reqs) }

// capless answers a call the decider wants made without capabilities:
// a netlink socket(2) is handed over, a netlink send made by the
// supervisor. It returns false, without answering, when that cannot be
// done; the call then continues in the kernel, as before.
func (l *loop) capless(c *Call) bool {
	if l.capMaker == nil {
		return false
	}
	switch c.Syscall.Kind {
	case bpf.Socket:
		return !l.noAddfd.Load() && l.handOver(c)
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
func (l *loop) handOver(c *Call) bool {
	typ := int(int32(c.Args[1]))
	fd, err := l.capMaker.socket(int(int32(c.Args[0])), typ, int(int32(c.Args[2])))
	if err != nil {
		// The kernel's own answer to these arguments (EPROTONOSUPPORT,
		// EINVAL, EMFILE…): the target gets it.
		l.answer(c, Answer{Errno: errnoOf(err)})
		return true
	}
	defer unix.Close(fd)
	a := notifAddfd{ID: c.ID, Flags: unix.SECCOMP_ADDFD_FLAG_SEND, Srcfd: uint32(fd)}
	if typ&unix.SOCK_CLOEXEC != 0 {
		a.NewfdFlags = unix.O_CLOEXEC
	}
	_, err = addFD(l.listener, &a)
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
	l.answer(c, Answer{Errno: errnoOf(err)})
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
func (l *loop) sendCapless(c *Call) bool {
	n := c.netlink
	if n == nil || n.control || n.oversize || len(n.payloads) != 1 {
		return false
	}
	sfd, err := c.borrow(int(int32(c.Args[0])))
	if err != nil {
		return false
	}
	defer unix.Close(sfd)
	flags := int(int32(c.Args[3])) // sendto(fd, buf, len, flags, …)
	if c.Syscall.Kind == bpf.SendMsg {
		flags = int(int32(c.Args[2])) // sendmsg(fd, msg, flags)
	}
	payload, to := n.payloads[0], n.dests[0]
	l.capMaker.do(func() { err = unix.Sendto(sfd, payload, flags, &to) })
	if err != nil {
		l.answer(c, Answer{Errno: errnoOf(err)})
		return true
	}
	l.stats.CaplessNetlink.Add(1)
	l.answerValue(c, int64(len(payload)))
	return true
}

func errnoOf(err error) unix.Errno {
	var en unix.Errno
	if errors.As(err, &en) {
		return en
	}
	return unix.EPERM
}
