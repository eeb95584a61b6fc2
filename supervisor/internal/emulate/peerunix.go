package emulate

import (
	"encoding/binary"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/bpf"
	"github.com/nettrap/nettrap/decision"
	"github.com/nettrap/nettrap/procfs"
	"github.com/nettrap/nettrap/sealns"
	"github.com/nettrap/nettrap/supervisor/internal/ascaller"
	"github.com/nettrap/nettrap/supervisor/internal/rawsock"
	"github.com/nettrap/nettrap/supervisor/internal/sockdiag"
)

// The unix peer checks of --sealed (see peer.go).

// unixCheck is what checkUnixPeers leaves for after the call: the pins to
// close, and the listener's process a stream connect must reach.
type unixCheck struct {
	pins []int
	// verify: a stream connect to an abstract name, whose listener
	// could change between the look and the connect.
	verify bool
}

func (u *unixCheck) close() { closeFds(u.pins) }

// checkUnixPeers checks, before the call, every unix destination of a
// connect, or of a datagram send (a stream send ignores or refuses an
// address; a seqpacket send goes to the peer its connect checked). It
// pins path names (c.msgs is rewritten; makeUnix's keepMsgs puts them
// back). orig are the names as checked (c.msgs may name the caller's
// working directory or descriptors through nettrap's /proc/self instead:
// viaProcCwd, callerProcSelf): what a rule of nettrap's command line
// names, and the audit trail shows.
func (s *Borrowed) checkUnixPeers(c *Call, typ int, orig [][]byte) (u unixCheck, r Result, stop bool) {
	connect := c.Syscall.Kind == bpf.Connect
	if !connect && typ != unix.SOCK_DGRAM {
		return u, r, false
	}
	caller := s.via // resolves names as the caller: cwd, root, credentials
	for i := range c.Msgs {
		name := c.Msgs[i].Name
		if len(name) <= 2 || binary.NativeEndian.Uint16(name) != unix.AF_UNIX {
			continue // unnamed: the kernel refuses it, nothing is reached
		}
		pinned := -1
		if name[2] == 0 {
			treeOwned, starting := s.peerNetns(c)
			if starting && s.e.Sealed != nil {
				// The namespace nettrap made for the tree: only the
				// tree is there, unless a rule names the host's.
				if r, stop := s.sealedAbstract(c, orig[i]); stop {
					return u, r, true
				}
				continue
			}
			if treeOwned {
				continue // an abstract name of a namespace the tree made
			}
			if !starting {
				if r, stop := s.outside(c, orig[i], decision.Peer{UID: -1, Why: "in a network namespace nettrap cannot inspect"}); stop {
					return u, r, true
				}
				continue
			}
		} else {
			fd, errno, err := pin(caller, name)
			if err != nil {
				r, _ = s.e.Cannot(c, err)
				return u, r, true
			}
			if errno != 0 {
				return u, Result{Errno: errno}, true
			}
			u.pins = append(u.pins, fd)
			c.Msgs[i].Name = procSelfFd(fd)
			pinned = fd
			s.via = caller.Pinned()
		}
		var p *decision.Peer
		var err error
		if typ == unix.SOCK_DGRAM {
			p, err = s.boundPeer(c.Msgs[i].Name, pinned, unix.SOCK_DGRAM)
		} else {
			p, err = s.boundPeer(c.Msgs[i].Name, pinned, unix.SOCK_STREAM)
			// An abstract name found the tree's, or free: verified
			// after the connect. One outside that a rule lets through
			// is reached by its name, whoever holds it by then.
			u.verify = u.verify || (pinned < 0 && p == nil)
		}
		switch {
		case err != nil:
			s.e.Report(fmt.Errorf("allowed %s by pid %d denied: its peer cannot be checked: %w", c.Syscall.Name, c.TID, err))
			return u, Result{Errno: unix.EPERM}, true
		case p != nil:
			if r, stop := s.outside(c, orig[i], *p); stop {
				return u, r, true
			}
		}
	}
	return u, r, false
}

// pin opens a unix path name with O_PATH as the caller resolves it.
func pin(caller *ascaller.Ctx, name []byte) (fd int, errno unix.Errno, err error) {
	path := sockdiag.UnixName(name[2:])
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
	if err := caller.Run(open); err != nil {
		return -1, 0, err
	}
	return fd, errno, nil
}

// boundPeer finds the socket a connect or send to name would reach,
// without connecting to it (a daemon may act on a bare connection; a
// datagram connect of nettrap's own would be refused where the receiver
// is connected to the caller): among the sockets sock_diag lists
// (listeners for a stream or seqpacket connect, datagram sockets for a
// datagram), the one bound to the pinned socket file, or to the abstract
// name. p is nil when it is the tree's (or nettrap's), or when nothing is
// bound there (the call then fails by itself).
func (s *Borrowed) boundPeer(name []byte, pinned, typ int) (p *decision.Peer, err error) {
	role, list := "listener", sockdiag.UnixListeners
	if typ == unix.SOCK_DGRAM {
		role, list = "receiver", sockdiag.UnixReceivers
	}
	var st *unix.Stat_t
	if pinned >= 0 {
		st = new(unix.Stat_t)
		if err := unix.Fstat(pinned, st); err != nil {
			return nil, os.NewSyscallError("fstat", err)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
			return nil, nil // ECONNREFUSED, from the kernel
		}
	}
	// sock_diag lists only its own namespace's sockets: in the one
	// nettrap made for the command (the tree's are there) first.
	lists := []func() ([]sockdiag.UnixDiag, error){list}
	if s.e.Sealed != nil {
		lists = append([]func() ([]sockdiag.UnixDiag, error){inNetns(s.e.Sealed, list)}, list)
	}
	var l *sockdiag.UnixDiag
	for _, list = range lists {
		ls, err := list()
		if err != nil {
			return nil, err
		}
		if pinned >= 0 {
			l = sockdiag.ListenerOf(ls, st, "")
		} else {
			l = sockdiag.ListenerOf(ls, nil, sockdiag.UnixName(name[2:]))
		}
		if l != nil {
			break
		}
	}
	switch {
	case l == nil && pinned >= 0:
		return s.unseenListener(name, typ, role)
	case l == nil:
		// No listener of that name in the socket's namespace:
		// ECONNREFUSED, from the kernel (see verifyListener for one
		// that comes in between).
		return nil, nil
	}
	if s.e.Tree.holds(uint64(l.Ino)) {
		return nil, nil
	}
	pid := procfs.SocketHolder(uint64(l.Ino))
	if pid == 0 && unixClosedSince(list, l.Ino) {
		// Nobody holds it and it is gone: a socket the tree closed
		// while it connected to it, not a peer outside (as for
		// loopback, closedSince).
		return nil, nil
	}
	return &decision.Peer{Name: l.Name, PID: pid, Comm: procfs.Comm(pid), UID: l.UID, Role: role}, nil
}

// inNetns is list, made in ns (on its thread kept for the purpose).
func inNetns(ns *sealns.Netns, list func() ([]sockdiag.UnixDiag, error)) func() ([]sockdiag.UnixDiag, error) {
	return func() (ls []sockdiag.UnixDiag, err error) {
		err = ns.Run(func() error {
			ls, err = list()
			return err
		})
		return ls, err
	}
}

// unixClosedSince tells whether list no longer has the socket of inode
// ino.
func unixClosedSince(list func() ([]sockdiag.UnixDiag, error), ino uint32) bool {
	ls, err := list()
	if err != nil {
		return false
	}
	for _, l := range ls {
		if l.Ino == ino {
			return false
		}
	}
	return true
}

// unseenListener: a socket file no listener of nettrap's namespace is
// bound to. Either nothing listens there (the connect fails by itself),
// or the listener is of another network namespace (a daemon's socket
// bind-mounted from a container), which nettrap cannot ask about. Only
// then a connect of nettrap's own, which that listener sees, tells them
// apart: such a listener counts as outside the tree.
func (s *Borrowed) unseenListener(name []byte, typ int, role string) (*decision.Peer, error) {
	fd, err := unix.Socket(unix.AF_UNIX, typ|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, os.NewSyscallError("socket", err)
	}
	defer unix.Close(fd)
	var errno unix.Errno
	if err := s.via.Run(func() { errno = rawsock.Connect(fd, name) }); err != nil {
		return nil, err
	}
	if errno == unix.ECONNREFUSED || errno == unix.ENOENT || errno == unix.EPROTOTYPE {
		return nil, nil
	}
	p := &decision.Peer{Role: role, UID: -1, Why: "in a network namespace nettrap cannot inspect"}
	if cred, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED); err == nil && cred.Pid > 0 {
		p.PID, p.Comm = int(cred.Pid), procfs.Comm(int(cred.Pid))
	}
	return p, nil
}

// verifyListener: after a checked stream connect to an abstract name
// (which cannot be pinned: another listener could take the name between
// the look and the connect), the listener's process (SO_PEERCRED, the
// process that called listen) must be of the tree. Otherwise the socket
// is shut down, so that the target can never write on it, and refused.
func (s *Borrowed) verifyListener(c *Call, verify bool, r Result) Result {
	if r.Errno != 0 || !verify {
		return r
	}
	cred, err := unix.GetsockoptUcred(s.FD, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err == nil && s.e.Tree.has(int(cred.Pid)) {
		return r
	}
	unix.Shutdown(s.FD, unix.SHUT_RDWR)
	s.e.Report(fmt.Errorf("allowed %s by pid %d refused: it reached another listener than the one checked", c.Syscall.Name, c.TID))
	return Result{Errno: unix.ECONNREFUSED}
}
