package emulate

import (
	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/supervisor/internal/rawsock"
)

// handInSend makes a datagram send that names an address outside the
// command's network namespace (handin.go): a UDP socket of nettrap's,
// made outside, like the caller's (its options, its port where it was
// bound to the wildcard address), is handed in in place of the caller's,
// and the send made on it, so that the answers come back to the caller.
// Only an unconnected socket bound to no address or to the wildcard one
// can be replaced so: one bound to an address of the namespace, or
// connected, would lose what it was bound or connected to.
func (s *Borrowed) handInSend(c *Call, typ int) Result {
	domain, e1 := rawsock.SockoptInt(s.FD, unix.SO_DOMAIN)
	proto, e2 := rawsock.SockoptInt(s.FD, unix.SO_PROTOCOL)
	fl, e3 := rawsock.FileFlags(s.FD)
	if e1 != 0 || e2 != 0 || e3 != 0 || typ != unix.SOCK_DGRAM || !handable(domain, typ, proto) {
		return s.cannotHandIn(c, "it is not made on a UDP socket")
	}
	if _, err := unix.Getpeername(s.FD); err == nil {
		return s.cannotHandIn(c, "its socket is connected")
	}
	port, ok := wildcardPort(s.FD)
	if !ok {
		return s.cannotHandIn(c, "its socket is bound to an address of the command's network namespace")
	}
	fd, err := s.outsideSocket(domain, typ, proto)
	if err != nil {
		return Result{Errno: ErrnoOf(err)}
	}
	defer unix.Close(fd)
	if port != 0 {
		// The port the caller has, where the host has it free; else the
		// send picks one, as it would have for an unbound socket.
		unix.Bind(fd, wildcard(domain, port))
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFL, fl); err != nil {
		return Result{Errno: ErrnoOf(err)}
	}
	if r, ok := s.install(c, fd); !ok {
		return r
	}
	caller := s.FD
	s.FD = fd
	defer func() { s.FD = caller }()
	return s.send(c, typ)
}

// wildcardPort is the port of a socket bound to the wildcard address (0
// for one not bound); ok is false for one bound to another address.
func wildcardPort(fd int) (port int, ok bool) {
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return 0, false
	}
	switch sa := sa.(type) {
	case *unix.SockaddrInet4:
		return sa.Port, sa.Addr == [4]byte{}
	case *unix.SockaddrInet6:
		return sa.Port, sa.Addr == [16]byte{}
	}
	return 0, false
}

// wildcard is the wildcard address of domain with port.
func wildcard(domain, port int) unix.Sockaddr {
	if domain == unix.AF_INET6 {
		return &unix.SockaddrInet6{Port: port}
	}
	return &unix.SockaddrInet4{Port: port}
}
