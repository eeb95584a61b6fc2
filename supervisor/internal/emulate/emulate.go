package emulate

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/bpf"
	"github.com/nettrap/nettrap/classify"
	"github.com/nettrap/nettrap/sealns"
	"github.com/nettrap/nettrap/supervisor/internal/ascaller"
	"github.com/nettrap/nettrap/supervisor/internal/pidfds"
	"github.com/nettrap/nettrap/supervisor/internal/rawsock"
)

// Emulator makes allowed connects and sends itself, on the target's own
// socket (borrowed with pidfd_getfd), with the bytes the decision was
// made on. An allowed call answered with CONTINUE is read a second time by
// the kernel, and another thread of the target can change the address, or
// dup2() another socket onto the descriptor, in between
// (seccomp_unotify(2), "the TOCTOU problem"); an emulated one is read
// once.
//
// Every socket family a confined process can hold is emulated: inet
// (connects, datagram and stream sends), unix (made as the caller would:
// internal/ascaller, emuunix.go) and netlink (sends to the kernel, without
// their address: emuunix.go). What cannot be made faithfully (unix
// SCM_CREDENTIALS, netlink to another port or group) goes to Cannot.
type Emulator struct {
	Required bool // EmulateOn: a call that cannot be emulated is denied
	Notices  io.Writer
	noted    sync.Once
	pidfds   pidfds.Cache
	watches  watcher     // calls that may block (emuwatch.go)
	Stop     int         // read end of the loop's wake pipe: readable once the loop stops
	Report   func(error) // the engine's own errors (supervisor's loop.report, tracer.report)
	// callers make unix calls as the caller (internal/ascaller), made on
	// first use.
	callersOnce sync.Once
	callers     *ascaller.Pool
	// Tree is the confined tree, for the peer checks of --sealed
	// (peer.go).
	Tree Tree
	// Sealed is the network namespace nettrap made for the command
	// (--sealed, package sealns), which is also the starting one; nil
	// when the command runs in nettrap's own (handin.go).
	Sealed *sealns.Netns
	// Restarts: a signal can take the target out of a call nettrap has
	// received (no WAIT_KILLABLE_RECV), and the kernel restarts it
	// (restart.go).
	Restarts  bool
	connected connected
	// AllowedOut, when set (the kernel engine), is told of each allowed
	// inet call before nettrap makes it on fd, its copy of the caller's
	// socket: the engine's backstop then lets the packets to dests out.
	AllowedOut func(fd int, dests []classify.Dest)
	// hostNoted are the loopback addresses noteHostListener looked at,
	// hostNotes how many.
	hostNoted sync.Map
	hostNotes atomic.Int32
}

// Result is what an emulated call returns to the target.
type Result struct {
	Val   int64
	Errno unix.Errno
	// Unmade: the caller left the call (a signal, or it died) before
	// nettrap made it, so nothing was sent or connected and nobody reads
	// the answer. Where the kernel restarts calls (before 5.19) the
	// restart is decided and made afresh, never answered with this.
	Unmade bool
	// AnsweredEarly: the call's watch answered it already, when the
	// thread had a signal to take (emuintr.go), and the call was made
	// on. The engine must not answer it again: the kernel allows one
	// answer per notification, and a second one fails with EINPROGRESS
	// until the thread has left (ENOENT after). This result is then the
	// answer the thread lost, as one a signal took away.
	AnsweredEarly bool
}

// left is the answer to a call its caller left before nettrap made it
// (Result.Unmade): read by nobody.
var left = Result{Errno: unix.EPERM, Unmade: true}

// Emulable tells whether a call is of a kind emulation may take.
func Emulable(c *Call) bool {
	if c.Syscall.Foreign {
		return false
	}
	switch c.Syscall.Kind {
	case bpf.Connect, bpf.SendTo, bpf.SendMsg, bpf.SendMMsg:
		return true
	case bpf.SetSockOpt:
		return emulableOpt(c)
	}
	return false
}

// perform makes an allowed call in the supervisor. done is false when the
// call should continue in the kernel after all (a call that cannot be
// emulated, in auto mode: see cannot).
func (e *Emulator) perform(c *Call) (r Result, done bool) {
	r, done, _ = e.Make(c, true)
	return r, done
}

// Make is perform with a choice: a caller that must not wait long (the
// ptrace engine's tracer, which serves every stop) passes mayBlock false,
// and a call that may block (a connect, a stream send, or a unix or
// netlink send on a blocking socket) is then not made: wouldBlock says so.
func (e *Emulator) Make(c *Call, mayBlock bool) (r Result, done, wouldBlock bool) {
	s, err := Borrow(c, e)
	switch {
	case errors.Is(err, ErrGone):
		return left, true, false // nobody will read the answer
	case errors.Is(err, unix.EBADF):
		return Result{Errno: unix.EBADF}, true, false // as the kernel would say
	case err != nil:
		r, done = e.Cannot(c, err)
		return r, done, false
	}
	// Closed here, not deferred: a defer in a function of this many
	// returns is not open-coded, and cost every emulated call some 30 ns.
	r, done, wouldBlock = e.makeOn(s, c, mayBlock)
	// The watch has ended (watcher.end waited for it): left is read
	// after its last write.
	r.AnsweredEarly = s.left
	s.Close()
	return r, done, wouldBlock
}

// makeOn is Make's on the borrowed socket s.
func (e *Emulator) makeOn(s *Borrowed, c *Call, mayBlock bool) (r Result, done, wouldBlock bool) {
	if c.InTree && !c.Netns.OwnsSocket(s.FD) {
		// Another socket was put at the number after the decision.
		e.Report(fmt.Errorf("allowed %s by pid %d denied: its descriptor no longer names a socket of a namespace the tree made", c.Syscall.Name, c.TID))
		return Result{Errno: unix.EPERM}, true, false
	}
	if c.Syscall.Kind == bpf.SetSockOpt {
		return setOpt(s, c), true, false
	}
	if mayBlock && e.Sealed == nil && c.Peer == nil && prefetchedInetSend(c) {
		return s.sendPrefetched(c), true, false
	}
	connect := c.Syscall.Kind == bpf.Connect
	typ, family, err := s.kind(c, connect)
	switch {
	case errors.Is(err, unix.ENOTSOCK):
		return Result{Errno: unix.ENOTSOCK}, true, false
	case err != nil:
		r, done = e.Cannot(c, err)
		return r, done, false
	}
	s.family = family
	switch family {
	case unix.AF_INET, unix.AF_INET6:
		if e.Sealed != nil && s.inSealed(c) {
			return s.sealedInet(c, typ, mayBlock)
		}
		if c.Peer != nil {
			if r, stop := s.checkInetPeers(c); stop {
				return r, true, false
			}
		}
		if e.AllowedOut != nil {
			e.AllowedOut(s.FD, c.Dests)
		}
		if connect && mayBlock && c.Unsignaled && !e.Restarts {
			return s.watchedConnect(c), true, false
		}
	case unix.AF_UNIX:
		return e.makeUnix(s, c, typ, mayBlock)
	case unix.AF_NETLINK:
		return e.makeNetlink(s, c, typ, mayBlock)
	case unix.AF_PACKET:
		if !c.InTree {
			r, done = e.Cannot(c, fmt.Errorf("%s on a packet socket", c.Syscall.Name))
			return r, done, false
		}
		// Allowed only in a namespace of the tree's, checked above on
		// this very socket: made with the bytes the decision read.
	default:
		r, done = e.Cannot(c, fmt.Errorf("%s on a socket of family %d", c.Syscall.Name, family))
		return r, done, false
	}
	return s.makeNow(c, typ, mayBlock)
}

// watchedConnect is makeNow's inet connect on a thread that blocks every
// signal (Call.Unsignaled), where calls do not restart: made without
// asking whether the socket blocks (an fcntl per connect). It is listed
// for the watcher either way; a non-blocking connect returns long before
// the watch would start. And on such a thread a blocking connect is made
// as a non-blocking one is: it is never interrupted, so never resumed
// (blockingConnect).
func (s *Borrowed) watchedConnect(c *Call) Result {
	e := s.e
	defer e.watches.end(e.watches.begin(s, e.Stop, true))
	return s.connect(c.Msgs[0].Name)
}

// makeNow makes the call on the borrowed socket, under a watch when it
// may block (see make).
func (s *Borrowed) makeNow(c *Call, typ int, mayBlock bool) (r Result, done, wouldBlock bool) {
	connect := c.Syscall.Kind == bpf.Connect
	if s.blocks(c, typ) {
		if !mayBlock {
			return s.tryNow(c, typ)
		}
		e := s.e
		defer e.watches.end(e.watches.begin(s, e.Stop, connect))
		if connect {
			return s.blockingConnect(c.Msgs[0].Name), true, false
		}
	}
	if connect {
		return s.connect(c.Msgs[0].Name), true, false
	}
	return s.send(c, typ), true, false
}

// tryNow is makeNow for a caller that must not wait, on a call that may
// block: a unix or netlink datagram send (sendto, sendmsg) is tried with
// MSG_DONTWAIT, which sends it whole or not at all; when it would block
// (EAGAIN, the receiver's queue full), or for any other call, wouldBlock
// says the caller must make it where it may wait. (Under the ptrace
// engine most unix sockets are blocking, and a call made aside costs two
// thread hand-offs and a stop.)
func (s *Borrowed) tryNow(c *Call, typ int) (r Result, done, wouldBlock bool) {
	local := s.family == unix.AF_UNIX || s.family == unix.AF_NETLINK
	if !local || typ == unix.SOCK_STREAM || (c.Syscall.Kind != bpf.SendTo && c.Syscall.Kind != bpf.SendMsg) {
		return Result{}, false, true
	}
	s.dontWait = true
	r = s.send(c, typ)
	s.dontWait = false
	if r.Errno == unix.EAGAIN {
		c.Msgs[0].Payload = nil // back in the pool: read it again
		return Result{}, false, true
	}
	return r, true, false
}

// kind returns the socket's type and family. A connect's type is not
// asked (0): only a send's path depends on it. Nor is the family of a
// socket every message of the call names an inet address on (see
// inetNamed). That spares a getsockopt or two per call; a connect on a
// descriptor that is no socket says ENOTSOCK itself.
func (s *Borrowed) kind(c *Call, connect bool) (typ, family int, err error) {
	if !connect {
		t, errno := rawsock.SockoptInt(s.FD, unix.SO_TYPE)
		if errno != 0 {
			return 0, 0, sockoptErr(errno)
		}
		typ = t
	}
	if inetNamed(c) != 0 {
		return typ, unix.AF_INET, nil
	}
	domain, errno := rawsock.SockoptInt(s.FD, unix.SO_DOMAIN)
	if errno != 0 {
		return 0, 0, sockoptErr(errno)
	}
	return typ, domain, nil
}

// sockoptErr wraps a failed getsockopt (ENOTSOCK is the caller's
// answer, which errors.Is finds).
func sockoptErr(errno unix.Errno) error {
	return os.NewSyscallError("getsockopt", errno)
}

// inetNamed returns AF_INET when every message of c names an inet
// address (AF_INET or AF_INET6), and 0 otherwise. The socket's own family
// need not be asked then (a getsockopt per call saved): on an inet socket
// the call is emulated as it would be; on any other an inet address is
// refused by the socket's own protocol before anything is sent (unix:
// EINVAL, netlink: EINVAL), so making the call on the borrowed socket
// gives the target the errno the kernel would. (One nuance: a unix socket
// reads its control messages first, so a bad descriptor in SCM_RIGHTS
// says EBADF, not EINVAL.)
func inetNamed(c *Call) int {
	if len(c.Msgs) == 0 {
		return 0
	}
	for _, m := range c.Msgs {
		if len(m.Name) < 2 {
			return 0
		}
		switch binary.NativeEndian.Uint16(m.Name) {
		case unix.AF_INET, unix.AF_INET6:
		default:
			return 0
		}
	}
	return unix.AF_INET
}

// prefetchedInetSend: c is a sendto or a sendmsg to an inet address
// whose payload was read with the address (decode's readSendTo and
// prefetchMsgPayload), so a datagram's whole, or a stream send that one
// sendmsg makes (at most a datagram's size, far below a stream's send
// window).
func prefetchedInetSend(c *Call) bool {
	return (c.Syscall.Kind == bpf.SendTo || c.Syscall.Kind == bpf.SendMsg) &&
		len(c.Msgs) == 1 && c.Msgs[0].Payload != nil && inetNamed(c) != 0
}

// sendPrefetched makes a prefetchedInetSend without asking the socket's
// type (a getsockopt per send): on a datagram socket it is the send of
// any type's path, on a stream socket the only window of sendStream.
// Either may block (a full send buffer), so it is watched as a blocking
// stream send would be (no fcntl asks whether it can: a watch listed
// for a call that returns at once costs less than asking).
func (s *Borrowed) sendPrefetched(c *Call) Result {
	s.family = unix.AF_INET
	e := s.e
	defer e.watches.end(e.watches.begin(s, e.Stop, false))
	return s.send(c, unix.SOCK_DGRAM)
}

// Cannot handles a call that emulation Cannot take: denied when
// emulation is required, or when the call was allowed as one in a
// namespace of the tree's (internal/namespace), and reported as a supervisor error
// (the call was allowed); continued in the kernel otherwise, said once.
func (e *Emulator) Cannot(c *Call, err error) (Result, bool) {
	if e.Required || c.InTree {
		e.Report(fmt.Errorf("allowed %s by pid %d denied: it cannot be made race-free (%w)", c.Syscall.Name, c.TID, err))
		return Result{Errno: unix.EPERM}, true
	}
	e.noted.Do(func() {
		fmt.Fprintf(e.Notices, "nettrap: emulation unavailable for some calls (%v): they continue in the kernel, where a racing thread could change their address or descriptor\n", err)
	})
	return Result{}, false
}

// sendFlags returns the flags argument of a send.
func sendFlags(c *Call) int {
	switch c.Syscall.Kind {
	case bpf.SendTo, bpf.SendMMsg:
		return int(int32(c.Args[3]))
	case bpf.SendMsg:
		return int(int32(c.Args[2]))
	}
	return 0
}
