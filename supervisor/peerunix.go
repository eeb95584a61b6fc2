package supervisor

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/bpf"
	"github.com/nettrap/nettrap/procfs"
)

// The unix peer checks of --sealed (see peer.go).

// probeTimeout bounds a probe's connect when the listener's backlog is
// full: the target's own connect would wait too, and gets EAGAIN.
const probeTimeout = 2

// unixCheck is what checkUnixPeers leaves for after the call: the pins to
// close, and the listener's process a stream connect must reach.
type unixCheck struct {
	pins     []int
	listener int // 0: not a checked stream connect
}

func (u *unixCheck) close() { closeFds(u.pins) }

// checkUnixPeers checks, before the call, every unix destination of a
// connect, or of a datagram send (a stream send ignores or refuses an
// address; a seqpacket send goes to the peer its connect checked). It
// pins path names (c.msgs is rewritten; makeUnix's keepMsgs puts them
// back).
func (s *borrowed) checkUnixPeers(c *Call, typ int, mayBlock bool) (u unixCheck, r result, stop bool) {
	connect := c.Syscall.Kind == bpf.Connect
	if !connect && typ != unix.SOCK_DGRAM {
		return u, r, false
	}
	orig := make([][]byte, len(c.msgs))
	for i := range c.msgs {
		orig[i] = c.msgs[i].name
	}
	for i := range c.msgs {
		name := c.msgs[i].name
		if len(name) <= 2 || binary.NativeEndian.Uint16(name) != unix.AF_UNIX {
			continue // unnamed: the kernel refuses it, nothing is reached
		}
		if name[2] == 0 {
			treeOwned, starting := s.peerNetns(c)
			if treeOwned {
				continue // an abstract name of a namespace the tree made
			}
			if !starting {
				if r, stop := s.outside(c, orig[i], Peer{Why: "in a network namespace nettrap cannot inspect"}); stop {
					return u, r, true
				}
				continue
			}
		} else {
			fd, errno, err := s.pin(name)
			if err != nil {
				r, _ = s.e.cannot(c, err)
				return u, r, true
			}
			if errno != 0 {
				return u, result{errno: errno}, true
			}
			u.pins = append(u.pins, fd)
			c.msgs[i].name = procSelfFd(fd)
		}
		p, pid, errno, err := s.probe(c.msgs[i].name, typ, mayBlock)
		switch {
		case err != nil:
			s.e.report(fmt.Errorf("allowed %s by pid %d denied: its peer cannot be checked: %w", c.Syscall.Name, c.TID, err))
			return u, result{errno: unix.EPERM}, true
		case errno != 0:
			return u, result{errno: errno}, true // the call would fail the same way
		case p != nil:
			if r, stop := s.outside(c, orig[i], *p); stop {
				return u, r, true
			}
		}
		if connect && typ != unix.SOCK_DGRAM {
			u.listener = pid
		}
	}
	return u, r, false
}

// errForeignRoot: the caller's root is not nettrap's, where
// /proc/self/fd/N would not name nettrap's descriptor.
var errForeignRoot = errors.New("a unix path of a caller with another root cannot be pinned for its peer check")

// pin opens a unix path name with O_PATH as the caller resolves it.
func (s *borrowed) pin(name []byte) (fd int, errno unix.Errno, err error) {
	if s.via != nil && s.via.root >= 0 {
		return -1, 0, errForeignRoot
	}
	path := unixName(name[2:])
	fd = -1
	open := func() {
		var e error
		fd, e = unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
		if e != nil {
			errno, _ = e.(unix.Errno)
			if errno == 0 {
				errno = unix.EINVAL
			}
		}
	}
	if err := s.via.run(open); err != nil {
		return -1, 0, err
	}
	return fd, errno, nil
}

// probe connects a socket of nettrap's own, of the target's type, to
// name as the caller would, and tells the receiving socket's process: p
// is nil when it is the tree's (or nettrap's). errno is the probe's
// connect's failure, which the target's call would meet too.
func (s *borrowed) probe(name []byte, typ int, mayBlock bool) (p *Peer, pid int, errno unix.Errno, err error) {
	flags := unix.SOCK_CLOEXEC
	if !mayBlock {
		flags |= unix.SOCK_NONBLOCK
	}
	fd, err := unix.Socket(unix.AF_UNIX, typ|flags, 0)
	if err != nil {
		return nil, 0, 0, os.NewSyscallError("socket", err)
	}
	defer unix.Close(fd)
	unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &unix.Timeval{Sec: probeTimeout})
	if err := s.via.run(func() { errno = sysConnect(fd, name) }); err != nil {
		return nil, 0, 0, err
	}
	if errno != 0 {
		return nil, 0, errno, nil
	}
	if typ == unix.SOCK_DGRAM {
		p, err := s.e.tree.datagramPeer(fd)
		return p, 0, 0, err
	}
	cred, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil {
		return nil, 0, 0, os.NewSyscallError("getsockopt(SO_PEERCRED)", err)
	}
	pid = int(cred.Pid)
	if s.e.tree.has(pid) {
		return nil, pid, 0, nil
	}
	peer := &Peer{PID: pid, Comm: procfs.Comm(pid), Role: "listener"}
	if sa, err := unix.Getpeername(fd); err == nil {
		if su, ok := sa.(*unix.SockaddrUnix); ok {
			peer.Name = su.Name
		}
	}
	return peer, pid, 0, nil
}

// datagramPeer finds the socket a connected datagram socket of nettrap's
// sends to, and whether the tree holds it.
func (t *tree) datagramPeer(fd int) (*Peer, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, os.NewSyscallError("fstat", err)
	}
	d, err := askUnixDiag(uint32(st.Ino), unixDiagShowPeer)
	if err != nil {
		return nil, err
	}
	if d.peer == 0 {
		return nil, errors.New("unix_diag names no peer")
	}
	if _, ok := t.sockets()[uint64(d.peer)]; ok {
		return nil, nil
	}
	pid := procfs.SocketHolder(uint64(d.peer))
	peer := &Peer{PID: pid, Comm: procfs.Comm(pid), Role: "receiver"}
	if n, err := askUnixDiag(d.peer, unixDiagShowName); err == nil {
		peer.Name = n.name
	}
	return peer, nil
}

// verifyListener: after a checked stream connect, the socket must be
// connected to the process the probe found (an abstract name cannot be
// pinned, and a listener could change hands in between). Otherwise it is
// shut down, so that the target can never write on it, and refused.
func (s *borrowed) verifyListener(c *Call, want int, r result) result {
	if r.errno != 0 || want == 0 {
		return r
	}
	cred, err := unix.GetsockoptUcred(s.fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err == nil && int(cred.Pid) == want {
		return r
	}
	unix.Shutdown(s.fd, unix.SHUT_RDWR)
	s.e.report(fmt.Errorf("allowed %s by pid %d refused: it reached another listener than the one checked", c.Syscall.Name, c.TID))
	return result{errno: unix.ECONNREFUSED}
}
