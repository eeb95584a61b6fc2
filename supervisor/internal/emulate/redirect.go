package emulate

import (
	"encoding/binary"
	"net/netip"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/bpf"
	"github.com/nettrap/nettrap/decision"
	"github.com/nettrap/nettrap/procfs"
	"github.com/nettrap/nettrap/supervisor/internal/plainthread"
)

// Redirect makes a denied connect or send to the stand-in of a.Redirect()
// instead, on the target's own socket: the DNS sinkhole, which answers a
// resolver at once and learns the name it asked for. It calls Done
// exactly once, before the stand-in can see any traffic of the target's,
// and returns the answer's value and errno: a.Errno() when it cannot
// Redirect. Only connect, sendto and sendmsg are redirected (a sendmmsg
// fails as decided: one vector could mix destinations).
func (e *Emulator) Redirect(c *Call, a decision.Answer) (int64, unix.Errno) {
	rd := a.Redirect()
	s, to, ok := e.standInFor(c, rd)
	if !ok {
		rd.Done(netip.AddrPort{}, false)
		return 0, a.Errno()
	}
	defer s.Close()
	name := sockaddrBytes(to)
	if c.Syscall.Kind == bpf.Connect {
		// EINPROGRESS (a non-blocking socket) is a redirect under way:
		// the target learns the outcome on its own socket.
		r := s.connect(name)
		local, err := localAddr(s.FD)
		if (r.Errno != 0 && r.Errno != unix.EINPROGRESS) || err != nil {
			rd.Done(netip.AddrPort{}, false)
			return 0, a.Errno()
		}
		rd.Done(local, true)
		return 0, r.Errno
	}
	// A send carries the query itself: the stand-in must know where it
	// comes from before it arrives, so an unbound socket is bound first,
	// as the send would have bound it (any address, an ephemeral port).
	typ, err := unix.GetsockoptInt(s.FD, unix.SOL_SOCKET, unix.SO_TYPE)
	local, lerr := localAddr(s.FD)
	if err == nil && lerr == nil && local.Port() == 0 {
		if lerr = unix.Bind(s.FD, anyAddr(to)); lerr == nil {
			local, lerr = localAddr(s.FD)
		}
	}
	if err != nil || lerr != nil || typ == unix.SOCK_STREAM {
		rd.Done(netip.AddrPort{}, false)
		return 0, a.Errno()
	}
	if local.Addr().IsUnspecified() {
		// Bound to any address: the stand-in sees loopback's.
		local = netip.AddrPortFrom(to.Addr().Unmap(), local.Port())
	}
	rd.Done(local, true)
	c.Msgs[0].Name = name
	r := s.send(c, typ)
	return r.Val, r.Errno
}

// standInFor borrows the call's socket and picks the stand-in's address
// for it; ok is false when the call cannot be redirected.
func (e *Emulator) standInFor(c *Call, rd *decision.Redirect) (*Borrowed, netip.AddrPort, bool) {
	if c.Syscall.Kind == bpf.SendMMsg || len(c.Dests) != 1 {
		return nil, netip.AddrPort{}, false
	}
	s, err := Borrow(c, e)
	if err != nil {
		return nil, netip.AddrPort{}, false
	}
	domain, err := unix.GetsockoptInt(s.FD, unix.SOL_SOCKET, unix.SO_DOMAIN)
	if err == nil {
		if to, ok := standIn(domain, c.Dests[0].Addr.Addr(), rd); ok && standInNetns(s.FD, c) {
			return s, to, true
		}
	}
	s.Close()
	return nil, netip.AddrPort{}, false
}

func localAddr(fd int) (netip.AddrPort, error) {
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return netip.AddrPort{}, err
	}
	return sockaddrAddrPort(sa), nil
}

// anyAddr is the wildcard address of to's family, port 0.
func anyAddr(to netip.AddrPort) unix.Sockaddr {
	if to.Addr().Is4() {
		return &unix.SockaddrInet4{}
	}
	return &unix.SockaddrInet6{}
}

// standIn picks the stand-in address for a socket of domain aimed at
// dest: IPv4 for AF_INET sockets and for v4-mapped destinations (Go's
// dual-stack sockets), IPv6 loopback otherwise.
func standIn(domain int, dest netip.Addr, rd *decision.Redirect) (netip.AddrPort, bool) {
	switch {
	case domain == unix.AF_INET:
		return rd.To4, rd.To4.IsValid()
	case domain == unix.AF_INET6 && dest.Is4In6():
		// Stays IPv6 (v4-mapped): the socket is AF_INET6.
		return netip.AddrPortFrom(netip.AddrFrom16(rd.To4.Addr().As16()), rd.To4.Port()), rd.To4.IsValid()
	case domain == unix.AF_INET6:
		return rd.To6, rd.To6.IsValid() && rd.To6.Addr().Is6()
	}
	return netip.AddrPort{}, false
}

// sockaddrBytes encodes ap as a sockaddr_in (an IPv4 address) or a
// sockaddr_in6 (IPv6, v4-mapped included).
func sockaddrBytes(ap netip.AddrPort) []byte {
	if ap.Addr().Is4() {
		b := make([]byte, unix.SizeofSockaddrInet4)
		binary.NativeEndian.PutUint16(b[0:], unix.AF_INET)
		binary.BigEndian.PutUint16(b[2:], ap.Port())
		a := ap.Addr().As4()
		copy(b[4:], a[:])
		return b
	}
	b := make([]byte, unix.SizeofSockaddrInet6)
	binary.NativeEndian.PutUint16(b[0:], unix.AF_INET6)
	binary.BigEndian.PutUint16(b[2:], ap.Port())
	a := ap.Addr().As16()
	copy(b[8:], a[:])
	return b
}

func sockaddrAddrPort(sa unix.Sockaddr) netip.AddrPort {
	switch sa := sa.(type) {
	case *unix.SockaddrInet4:
		return netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), uint16(sa.Port))
	case *unix.SockaddrInet6:
		// A dual-stack socket's IPv4 traffic comes from the v4-mapped
		// address's IPv4 form, as the stand-in sees it.
		return netip.AddrPortFrom(netip.AddrFrom16(sa.Addr).Unmap(), uint16(sa.Port))
	}
	return netip.AddrPort{}
}

// standInNetns tells whether socket fd lives in the network namespace
// the stand-in listens in: the one the command started in (which is
// nettrap's own, or under --sealed the namespace nettrap made for the
// command, where the sinkhole is made too: run/confine.go). The loopback
// of a namespace the target made for itself is another one.
// SIOCGSKNS names the socket's namespace but needs CAP_NET_ADMIN there;
// without it the calling thread's namespace stands in for the socket's
// (a socket made in one namespace and used from another is rare, and
// then its traffic only reaches that namespace's own loopback).
func standInNetns(fd int, c *Call) bool {
	var ns, want unix.Stat_t
	var err error
	if c.Netns != nil {
		want.Dev, want.Ino = c.Netns.ID.Dev, c.Netns.ID.Ino
	} else {
		plainthread.Run(func() { err = unix.Stat(procfs.ThreadSelfPath("ns/net"), &want) })
	}
	if err != nil {
		return false
	}
	if nsfd, err := unix.IoctlRetInt(fd, unix.SIOCGSKNS); err == nil {
		defer unix.Close(nsfd)
		if unix.Fstat(nsfd, &ns) != nil {
			return false
		}
	} else if unix.Stat(procfs.TaskPath(c.TID, "ns/net"), &ns) != nil {
		return false
	}
	return ns.Dev == want.Dev && ns.Ino == want.Ino
}
