package emulate

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/bpf"
	"github.com/nettrap/nettrap/classify"
	"github.com/nettrap/nettrap/decision"
	"github.com/nettrap/nettrap/procfs"
	"github.com/nettrap/nettrap/supervisor/internal/plainthread"
	"github.com/nettrap/nettrap/supervisor/internal/rawsock"
)

// Calls of a command in the network namespace --sealed gives it
// (package sealns). Its loopback and unspecified addresses reach only the
// namespace's own sockets, which are the tree's (or nettrap's DNS
// sinkhole): such a call is made there with no peer check. A destination
// outside it (an address an --allow rule opens, a loopback address a
// rule names, which means the host's, the go command's downloads) has no
// route from it: nettrap makes a socket of its own in the namespace it
// started in, connects it to the checked address, and hands it in
// (SECCOMP_IOCTL_NOTIF_ADDFD with SETFD) at the caller's descriptor
// number, in place of the caller's socket. The kernel then reads neither
// the address nor the descriptor again: the caller gets the socket nettrap
// connected, whatever another thread did to the number meanwhile.

// inSealed tells whether the borrowed socket is of the namespace nettrap
// made for the command (the starting one): one getsockopt of its cookie
// where the kernel has cookies (5.14+; peerNetns).
func (s *Borrowed) inSealed(c *Call) bool {
	_, starting := s.peerNetns(c)
	return c.Netns != nil && starting
}

// sealedInet makes an allowed inet call on a socket of the namespace
// nettrap made for the command.
func (s *Borrowed) sealedInet(c *Call, typ int, mayBlock bool) (r Result, done, wouldBlock bool) {
	in, out := false, false
	for _, m := range c.Msgs {
		d, err := classify.Parse(m.Name, classify.OpSend)
		if err != nil || (d.Family != unix.AF_INET && d.Family != unix.AF_INET6) {
			continue
		}
		a := d.Addr.Addr().Unmap()
		if a.IsLoopback() || a.IsUnspecified() {
			if c.Peer == nil || c.Peer.Named == nil || !c.Peer.Named(d) {
				in = true // the namespace's own
				continue
			}
			// Recorded as the rule's, as a peer outside the tree is.
			if r, stop := s.outside(c, m.Name, decision.Peer{UID: -1, Why: "on the host, outside the command's network namespace"}); stop {
				return r, true, false
			}
		}
		out = true
	}
	switch {
	case !out:
		r, done, wouldBlock = s.makeNow(c, typ, mayBlock)
		if done {
			s.noteHostListener(c, r)
		}
		return r, done, wouldBlock
	case !mayBlock:
		return Result{}, false, true
	case c.Syscall.Kind == bpf.Connect:
		return s.handIn(c), true, false
	case in:
		return s.cannotHandIn(c, "its messages go both inside the command's network namespace and outside it"), true, false
	}
	return s.handInSend(c, typ), true, false
}

// cannotHandIn refuses a send to an address outside the namespace that
// cannot be handed in, saying why: ENETUNREACH, as from a namespace
// without a route there.
func (s *Borrowed) cannotHandIn(c *Call, why string) Result {
	s.e.Report(fmt.Errorf("allowed %s by pid %d failed with ENETUNREACH: %s, so it cannot be handed in (connect the socket first, or run with --sealed-netns=off)", c.Syscall.Name, c.TID, why))
	return Result{Errno: unix.ENETUNREACH}
}

// sealedAbstract: an abstract unix name in the namespace nettrap made
// for the command is the namespace's own, unless --allow-unix names it:
// then it is the host's, and a connect to it is handed in (recorded as
// the rule's); a datagram send to it cannot be (ECONNREFUSED, as where
// nothing is bound). stop says the call ends with r.
func (s *Borrowed) sealedAbstract(c *Call, name []byte) (r Result, stop bool) {
	d, err := classify.Parse(name, classify.OpSend)
	if err != nil || c.Peer == nil || c.Peer.Named == nil || !c.Peer.Named(d) {
		return Result{}, false
	}
	if r, stop := s.outside(c, name, decision.Peer{Name: "@" + d.Path, UID: -1, Why: "on the host, outside the command's network namespace"}); stop {
		return r, true
	}
	if c.Syscall.Kind != bpf.Connect {
		s.e.Report(fmt.Errorf("allowed %s by pid %d failed with ECONNREFUSED: a send to the host's abstract name @%s cannot be handed in (connect the socket first, or run with --sealed-netns=off)", c.Syscall.Name, c.TID, d.Path))
		return Result{Errno: unix.ECONNREFUSED}, true
	}
	return s.handIn(c), true
}

// handIn connects a socket of nettrap's, like the caller's, to the
// connect's checked address, and puts it in place of the caller's. A
// blocking caller gets the connect's outcome; a non-blocking one gets
// EINPROGRESS, and the outcome on the socket handed in, as from a
// connect of its own. The caller's socket's local address (a bind before
// the connect) is the namespace's and means nothing outside: it is not
// carried over; the options connect-time behaviour depends on are.
func (s *Borrowed) handIn(c *Call) Result {
	domain, e1 := rawsock.SockoptInt(s.FD, unix.SO_DOMAIN)
	typ, e2 := rawsock.SockoptInt(s.FD, unix.SO_TYPE)
	proto, e3 := rawsock.SockoptInt(s.FD, unix.SO_PROTOCOL)
	fl, e4 := rawsock.FileFlags(s.FD)
	if e1 == unix.ENOTSOCK {
		return Result{Errno: unix.ENOTSOCK} // as the kernel would say
	}
	if err := errors.Join(errnoErr(e1), errnoErr(e2), errnoErr(e3), errnoErr(e4)); err != nil {
		s.e.Report(fmt.Errorf("allowed connect by pid %d denied: its socket cannot be read to make one like it: %w", c.TID, err))
		return Result{Errno: unix.EPERM}
	}
	if !handable(domain, typ, proto) {
		// nettrap is root where it makes the namespace: a raw or ping
		// socket of its own would be more than the tree may make.
		s.e.Report(fmt.Errorf("allowed connect by pid %d denied: a socket of type %d, protocol %d is not handed in (TCP, MPTCP, UDP and unix stream and datagram sockets are)", c.TID, typ, proto))
		return Result{Errno: unix.EPERM}
	}
	fd, err := s.outsideSocket(domain, typ, proto)
	if err != nil {
		return Result{Errno: ErrnoOf(err)}
	}
	defer unix.Close(fd)
	errno := rawsock.Connect(fd, c.Msgs[0].Name)
	if errno == unix.EINPROGRESS && fl&unix.O_NONBLOCK == 0 {
		var gone bool
		if errno, gone = s.awaitConnect(c, fd); gone {
			return left // the caller left while it waited
		}
	}
	if errno != 0 && errno != unix.EINPROGRESS {
		return Result{Errno: errno} // refused, unreachable: the caller's socket stays
	}
	if fl&unix.O_NONBLOCK == 0 {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFL, fl&^unix.O_NONBLOCK); err != nil {
			return Result{Errno: ErrnoOf(err)}
		}
	}
	if r, ok := s.install(c, fd); !ok {
		return r
	}
	return Result{Errno: errno}
}

// install puts socket fd at the caller's descriptor number; ok false
// says it could not, and r is the answer.
func (s *Borrowed) install(c *Call, fd int) (r Result, ok bool) {
	err := c.Holder.HandIn(&c.Call, fd, closeOnExec(c))
	switch {
	case err == nil:
		return Result{}, true
	case errors.Is(err, unix.ENOENT) || !c.Pending():
		return left, false // gone: nobody reads it
	}
	s.e.Report(fmt.Errorf("allowed %s by pid %d denied: the socket nettrap made cannot be handed in: %w", c.Syscall.Name, c.TID, err))
	return Result{Errno: unix.EPERM}, false
}

// handable tells whether nettrap makes a socket of this kind to hand in:
// the kinds a program connects to a service with.
func handable(domain, typ, proto int) bool {
	switch {
	case domain == unix.AF_UNIX:
		return (typ == unix.SOCK_STREAM || typ == unix.SOCK_DGRAM || typ == unix.SOCK_SEQPACKET) && proto == 0
	case domain != unix.AF_INET && domain != unix.AF_INET6:
		return false
	case typ == unix.SOCK_STREAM:
		return proto == 0 || proto == unix.IPPROTO_TCP || proto == unix.IPPROTO_MPTCP
	case typ == unix.SOCK_DGRAM:
		return proto == 0 || proto == unix.IPPROTO_UDP
	}
	return false
}

// outsideSocket makes a socket like the caller's, non-blocking, in the
// namespace nettrap started in (on a plain thread), with the caller's
// options copied.
func (s *Borrowed) outsideSocket(domain, typ, proto int) (int, error) {
	var fd int
	var err error
	plainthread.Run(func() { fd, err = unix.Socket(domain, typ|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, proto) })
	if err != nil {
		return -1, err
	}
	copyOptions(s.FD, fd)
	return fd, nil
}

// awaitConnect waits for a blocking caller's connect, made non-blocking
// on fd, to end: its SO_ERROR, or EINPROGRESS at the caller's SO_SNDTIMEO
// (as the kernel says then). gone: it gave up because the caller left
// the call or exited, or nettrap stops; nobody reads an answer then.
func (s *Borrowed) awaitConnect(c *Call, fd int) (errno unix.Errno, gone bool) {
	var deadline time.Time
	if tv, err := unix.GetsockoptTimeval(s.FD, unix.SOL_SOCKET, unix.SO_SNDTIMEO); err == nil && (tv.Sec != 0 || tv.Usec != 0) {
		deadline = time.Now().Add(time.Duration(tv.Nano()))
	}
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}, {Fd: int32(s.pidfd), Events: unix.POLLIN}, {Fd: int32(s.e.Stop), Events: unix.POLLIN}}
	if s.e.Stop <= 0 {
		fds = fds[:2]
	}
	for {
		n, err := unix.Poll(fds, 100)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return ErrnoOf(err), false
		case n > 0 && fds[0].Revents != 0:
			v, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR)
			if err != nil {
				return ErrnoOf(err), false
			}
			return unix.Errno(v), false
		case n > 0 || !c.Pending():
			return unix.EPERM, true
		case !deadline.IsZero() && time.Now().After(deadline):
			return unix.EINPROGRESS, false
		}
	}
}

// handedOptions are the options copied to a socket handed in: those a
// program sets before connecting and that act on the connection.
var handedOptions = [][2]int{
	{unix.SOL_SOCKET, unix.SO_KEEPALIVE}, {unix.SOL_SOCKET, unix.SO_BROADCAST},
	{unix.SOL_SOCKET, unix.SO_OOBINLINE}, {unix.SOL_SOCKET, unix.SO_PRIORITY},
	{unix.IPPROTO_IP, unix.IP_TOS}, {unix.IPPROTO_IP, unix.IP_TTL},
	{unix.IPPROTO_IPV6, unix.IPV6_V6ONLY}, {unix.IPPROTO_IPV6, unix.IPV6_TCLASS},
	{unix.IPPROTO_IPV6, unix.IPV6_UNICAST_HOPS},
	{unix.IPPROTO_TCP, unix.TCP_NODELAY}, {unix.IPPROTO_TCP, unix.TCP_KEEPIDLE},
	{unix.IPPROTO_TCP, unix.TCP_KEEPINTVL}, {unix.IPPROTO_TCP, unix.TCP_KEEPCNT},
	{unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT}, {unix.IPPROTO_TCP, unix.TCP_SYNCNT},
}

// copyOptions copies handedOptions, SO_LINGER and the timeouts from the
// caller's socket to nettrap's; one the socket does not have (IPv6 on an
// IPv4 socket, TCP on UDP) is skipped.
func copyOptions(from, to int) {
	for _, o := range handedOptions {
		if v, err := unix.GetsockoptInt(from, o[0], o[1]); err == nil {
			unix.SetsockoptInt(to, o[0], o[1], v)
		}
	}
	if l, err := unix.GetsockoptLinger(from, unix.SOL_SOCKET, unix.SO_LINGER); err == nil && l.Onoff != 0 {
		unix.SetsockoptLinger(to, unix.SOL_SOCKET, unix.SO_LINGER, l)
	}
	for _, opt := range []int{unix.SO_RCVTIMEO, unix.SO_SNDTIMEO} {
		if tv, err := unix.GetsockoptTimeval(from, unix.SOL_SOCKET, opt); err == nil && (tv.Sec != 0 || tv.Usec != 0) {
			unix.SetsockoptTimeval(to, unix.SOL_SOCKET, opt, tv)
		}
	}
}

// closeOnExec is the caller's descriptor's close-on-exec flag, from
// /proc/TID/fdinfo (a borrowed copy has its own); O_CLOEXEC when it
// cannot be read, as Go and most programs make sockets.
func closeOnExec(c *Call) uint32 {
	b, err := os.ReadFile(procfs.TaskPath(c.TID, "fdinfo/"+strconv.Itoa(int(int32(c.Args[0])))))
	if err != nil {
		return unix.O_CLOEXEC
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "flags:"); ok {
			fl, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32)
			if err == nil && fl&unix.O_CLOEXEC == 0 {
				return 0
			}
			break
		}
	}
	return unix.O_CLOEXEC
}

func errnoErr(e unix.Errno) error {
	if e == 0 {
		return nil
	}
	return os.NewSyscallError("getsockopt", e)
}
