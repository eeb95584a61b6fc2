package emulate

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/bpf"
	"github.com/nettrap/nettrap/classify"
	"github.com/nettrap/nettrap/decision"
	"github.com/nettrap/nettrap/procfs"
	"github.com/nettrap/nettrap/supervisor/internal/namespace"
	"github.com/nettrap/nettrap/supervisor/internal/rawsock"
	"github.com/nettrap/nettrap/supervisor/internal/sockdiag"
)

// Peers of the confined tree, under --sealed.
//
// A unix or loopback destination is a socket on this machine, and the
// process behind it may reach the network for the caller (a Docker
// socket, an HTTP proxy on 127.0.0.1). An allowed call that carries a
// PeerCheck reaches only a socket held by the confined tree (the command
// and its descendants) or by nettrap itself (its hub, its DNS sinkhole);
// for any other, the decider's Outside says whether a rule of nettrap's
// own command line names it, and records the denial if not. nettrap
// learns the receiving socket before the call is made, so nothing is
// sent to, and no connection made from the target's socket to, a peer
// that is refused:
//
//   - unix path names are pinned first: opened with O_PATH as the
//     caller would resolve them, and the call (the probe's and the
//     real one) names /proc/self/fd/N instead. A socket file's inode
//     belongs to one bound socket for its life, so a rename or symlink
//     swapped in after the check changes nothing.
//   - unix stream and seqpacket: the listening socket bound to the
//     pinned file, or to the abstract name, is found with sock_diag,
//     without connecting to it (a daemon may act on a bare connection).
//     After a connect to an abstract name (which cannot be pinned) the
//     listener's process (SO_PEERCRED) must be the tree's, or the
//     socket is shut down and the call refused.
//   - unix datagram: the same among the datagram sockets (a connect of
//     nettrap's own would be refused where the receiver is connected to
//     the caller); a process of the tree must hold the one bound there.
//   - loopback (and the unspecified address, which Linux routes there):
//     sock_diag lists every socket that would take the connection or
//     datagram (all of them: SO_REUSEPORT), and the tree must hold each.
//     Between that look and the call another process could start
//     listening on the port: docs/threat-model.md says so.

// Tree is the confined tree, for the peer checks: its first process,
// and which of its processes held a socket when last looked at.
type Tree struct {
	root atomic.Int64
	mu   sync.Mutex
	seen map[uint64]int // socket inode → a tree process that held it
}

// SetRoot is called once the command runs.
func (t *Tree) SetRoot(pid int) { t.root.Store(int64(pid)) }

// has tells whether pid is nettrap, the command or a descendant of it.
// (A daemon the tree double-forked is reparented away: it counts as
// outside, which fails closed.)
func (t *Tree) has(pid int) bool {
	root := int(t.root.Load())
	return pid > 0 && (pid == os.Getpid() || pid == root || procfs.IsDescendant(pid, root))
}

// holds tells whether the tree (or nettrap) holds the socket of inode
// ino. A test connects to its own listener many times: the process seen
// holding it last time is asked first (is it still of the tree, does it
// still hold it: an inode number is reused only once its socket is
// gone), and only then is the whole tree read (every process's parent,
// every descriptor of the tree's), which costs milliseconds on a busy
// machine.
func (t *Tree) holds(ino uint64) bool {
	t.mu.Lock()
	pid, ok := t.seen[ino]
	t.mu.Unlock()
	if ok && t.has(pid) && procfs.HoldsSocket(pid, ino) {
		return true
	}
	root := int(t.root.Load())
	held := map[uint64]int{}
	pids := append([]int{os.Getpid(), root}, procfs.Descendants(root)...)
	procfs.SocketInodes(pids, held)
	t.mu.Lock()
	t.seen = held
	t.mu.Unlock()
	_, ok = held[ino]
	return ok
}

// ErrPeerUnchecked: a call with a PeerCheck that nettrap cannot make.
var ErrPeerUnchecked = errors.New("its peer must be checked, which needs nettrap to make the call")

// peerNetns tells where the borrowed socket lives: in a namespace the
// tree made (whatever it reaches there is the tree's), in the one
// nettrap started in (which its sock_diag sees), or elsewhere.
func (s *Borrowed) peerNetns(c *Call) (treeOwned, starting bool) {
	if c.Netns == nil {
		return false, true
	}
	if c.Netns.Cookie != 0 {
		// The cookie first: one getsockopt, where the tree's namespaces
		// take several calls; the starting namespace is never the
		// tree's (its owner is nettrap's user namespace).
		cookie, err := namespace.SocketCookie(s.FD)
		if err == nil && cookie == c.Netns.Cookie {
			return false, true
		}
		return c.Netns.OwnsSocket(s.FD), false
	}
	if c.Netns.OwnsSocket(s.FD) {
		return true, false
	}
	nsfd, err := unix.IoctlRetInt(s.FD, unix.SIOCGSKNS)
	if err != nil {
		return false, false
	}
	defer unix.Close(nsfd)
	var st unix.Stat_t
	if unix.Fstat(nsfd, &st) != nil {
		return false, false
	}
	return false, procfs.NsID{Dev: st.Dev, Ino: st.Ino} == c.Netns.ID
}

// outside asks the decider about message i's destination; stop says the
// call ends with r.
func (s *Borrowed) outside(c *Call, orig []byte, p decision.Peer) (r Result, stop bool) {
	op := classify.OpSend
	if c.Syscall.Kind == bpf.Connect {
		op = classify.OpConnect
	}
	d, err := classify.Parse(orig, op)
	if err != nil {
		return Result{Errno: unix.EINVAL}, true
	}
	if errno := c.Peer.Outside(d, p); errno != 0 {
		return Result{Errno: errno}, true
	}
	return Result{}, false
}

// checkInetPeers checks every loopback (or unspecified) destination of
// an inet call (see the top of this file).
func (s *Borrowed) checkInetPeers(c *Call) (r Result, stop bool) {
	proto, errno := rawsock.SockoptInt(s.FD, unix.SO_PROTOCOL)
	switch {
	case errno == unix.ENOTSOCK:
		// A descriptor that is no socket: the caller's own answer, as
		// bare (kind asks no SO_DOMAIN of an inet-named call).
		return Result{Errno: unix.ENOTSOCK}, true
	case errno != 0:
		return Result{Errno: unix.EPERM}, true
	}
	stream := proto == unix.IPPROTO_TCP
	if !stream && proto != unix.IPPROTO_UDP && proto != unix.IPPROTO_UDPLITE {
		return Result{}, false // nothing listens for it (ping sockets)
	}
	for _, m := range c.Msgs {
		d, err := classify.Parse(m.Name, classify.OpSend)
		if err != nil || (d.Family != unix.AF_INET && d.Family != unix.AF_INET6) {
			continue
		}
		a := d.Addr.Addr().Unmap()
		if !a.IsLoopback() && !a.IsUnspecified() {
			continue
		}
		treeOwned, starting := s.peerNetns(c)
		if treeOwned {
			return Result{}, false
		}
		if !starting {
			if r, stop := s.outside(c, m.Name, decision.Peer{UID: -1, Why: "in a network namespace nettrap cannot inspect"}); stop {
				return r, true
			}
			continue
		}
		socks, err := sockdiag.InetReceivers(d.Addr, proto)
		if err != nil {
			s.e.Report(fmt.Errorf("allowed %s by pid %d denied: its peer cannot be checked: %w", c.Syscall.Name, c.TID, err))
			return Result{Errno: unix.EPERM}, true
		}
		for _, sk := range socks {
			if s.e.Tree.holds(uint64(sk.INode)) {
				continue
			}
			pid := procfs.SocketHolder(uint64(sk.INode))
			if pid == 0 && closedSince(d.Addr, proto, sk.INode) {
				// Nobody holds it and it is gone: a socket the tree
				// closed while it connected to it (a test server
				// shutting down as a client dials), not a peer outside.
				continue
			}
			role := "receiver"
			if stream {
				role = "listener"
			}
			if r, stop := s.outside(c, m.Name, decision.Peer{PID: pid, Comm: procfs.Comm(pid), UID: int(sk.UID), Role: role}); stop {
				return r, true
			}
			break // a rule names it: the others do not matter
		}
	}
	return Result{}, false
}

// closedSince tells whether the socket of inode ino no longer takes what
// goes to dest: a socket whose last descriptor was closed between the
// dump and the look at the tree's descriptors. Asked only of a socket
// that no process holds.
func closedSince(dest netip.AddrPort, proto int, ino uint32) bool {
	socks, err := sockdiag.InetReceivers(dest, proto)
	if err != nil {
		return false
	}
	for _, sk := range socks {
		if sk.INode == ino {
			return false
		}
	}
	return true
}

// procSelfFd is the name of nettrap's descriptor fd as a unix address.
func procSelfFd(fd int) []byte {
	name := make([]byte, 2, 32)
	binary.NativeEndian.PutUint16(name, unix.AF_UNIX)
	return append(append(name, "/proc/self/fd/"+strconv.Itoa(fd)...), 0)
}
