package emulate

import (
	"encoding/binary"
	"os"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/bpf"
	"github.com/nettrap/nettrap/supervisor/internal/ascaller"
	"github.com/nettrap/nettrap/supervisor/internal/decode"
	"github.com/nettrap/nettrap/supervisor/internal/pidfds"
	"github.com/nettrap/nettrap/supervisor/internal/rawsock"
)

// ErrGone: the target left the call (it died, or a signal took it out)
// while its socket was being borrowed. Nobody waits for the answer. It
// is the caller threads' own (ascaller.ErrGone): either may say it.
var ErrGone = ascaller.ErrGone

// Borrowed is the supervisor's copy of a target's socket, taken with
// pidfd_getfd. It is the same open file description: same socket, same
// O_NONBLOCK, same options (SO_SNDTIMEO, TCP_FASTOPEN, UDP_SEGMENT …).
type Borrowed struct {
	FD, pidfd int
	call      *Call
	e         *Emulator
	entry     *pidfds.Entry
	left      bool      // answered before the call ended (emuintr.go; the watch's own)
	tgid      int       // the caller's process, once left
	w         watch     // while the call may block (emuwatch.go)
	small     smallIovs // a send's vectors (payload.go)
	family    int       // the socket's (AF_INET for any inet one)
	// via makes the call's own syscalls as the caller (unix sockets:
	// internal/ascaller); nil: directly.
	via *ascaller.Ctx
	// dontWait: a first try that must not block (tryNow).
	dontWait bool
	msg1     [1]rawsock.Msg // a sendto's or sendmsg's one message
}

// Borrow takes the call's socket from the calling thread, through a
// pidfd on the thread (openPidfd), so that a thread with a file table of
// its own (clone without CLONE_FILES) is served from that table. The
// pidfd is cached (internal/pidfds).
func Borrow(c *Call, e *Emulator) (*Borrowed, error) {
	target := int(int32(c.Args[0]))
	if ent := e.pidfds.Get(c.TID); ent != nil {
		fd, err := rawsock.PidfdGetfd(ent.FD, target) // always close-on-exec
		if err == 0 {
			return c.borrowed(fd, ent, e), nil
		}
		// The cached task is gone (ESRCH), or the descriptor is bad:
		// either way, ask again with a fresh pidfd.
		e.pidfds.Drop(c.TID, ent)
		e.pidfds.Put(ent)
	}
	pidfd, err := decode.OpenPidfd(&c.Call)
	if err != nil {
		return nil, err
	}
	ent := e.pidfds.Add(c.TID, pidfd)
	fd, errno := rawsock.PidfdGetfd(pidfd, target)
	if errno != 0 {
		e.pidfds.Put(ent)
		if errno == unix.ESRCH {
			return nil, ErrGone
		}
		return nil, os.NewSyscallError("pidfd_getfd", errno)
	}
	return c.borrowed(fd, ent, e), nil
}

// borrowed fills the call's own borrowed (no allocation per call: a call
// borrows its socket once at a time).
func (c *Call) borrowed(fd int, ent *pidfds.Entry, e *Emulator) *Borrowed {
	s := &c.sock
	*s = Borrowed{FD: fd, pidfd: ent.FD, call: c, e: e, entry: ent}
	return s
}

func (s *Borrowed) Close() {
	unix.Close(s.FD)
	s.e.pidfds.Put(s.entry)
}

// blocks tells whether the call may block for long: a connect or a
// stream send on a blocking socket, without MSG_DONTWAIT. (An inet
// datagram send blocks only while the send buffer drains; a unix or
// netlink one waits for its receiver to read.)
func (s *Borrowed) blocks(c *Call, typ int) bool {
	local := s.family == unix.AF_UNIX || s.family == unix.AF_NETLINK
	if c.Syscall.Kind != bpf.Connect && typ != unix.SOCK_STREAM && !local {
		return false
	}
	if c.Syscall.Kind == bpf.Connect && s.family == unix.AF_UNIX && typ == unix.SOCK_DGRAM {
		return false // it only names the peer
	}
	fl, err := rawsock.FileFlags(s.FD)
	if err != 0 || fl&unix.O_NONBLOCK != 0 {
		return false
	}
	return sendFlags(c)&unix.MSG_DONTWAIT == 0
}

// connect connects the socket to the checked address. A blocking connect
// interrupted by a signal to the supervisor's thread is resumed (the
// target never saw that signal); if the connection completed meanwhile,
// the resumed connect says EISCONN, which means success here.
func (s *Borrowed) connect(name []byte) Result {
	return s.resumedConnect(name, unix.EALREADY)
}

// resumedConnect is connect for a blocking connect with SO_SNDTIMEO: when
// a resumed connect times out it says EALREADY (the socket was
// connecting when it came), and the answer is timedOut, what the first
// call would have said (EINPROGRESS if it started the connect).
func (s *Borrowed) resumedConnect(name []byte, timedOut unix.Errno) Result {
	errno := s.sysConnect(name)
	for errno == unix.EINTR {
		switch errno = s.sysConnect(name); errno {
		case unix.EISCONN:
			errno = 0
		case unix.EALREADY:
			errno = timedOut
		}
	}
	return Result{Errno: errno}
}

// send makes the call's send(s) with the checked addresses and control
// data and the payload read from the target now.
func (s *Borrowed) send(c *Call, typ int) Result {
	flags := sendFlags(c)
	if s.dontWait {
		flags |= unix.MSG_DONTWAIT
	}
	if typ == unix.SOCK_STREAM && c.Syscall.Kind != bpf.SendMMsg {
		return s.sendStream(c, flags)
	}
	var msgs []rawsock.Msg
	checked := false // every byte was read before the notification was checked
	switch {
	case len(c.Msgs) == 1 && c.Msgs[0].Payload != nil:
		// A sendto's or an inet sendmsg's, read with its address before
		// the notification was checked (decode's readSendTo,
		// prefetchMsgPayload).
		m := c.Msgs[0]
		s.msg1[0] = rawsock.Msg{Name: m.Name, Control: m.Control, Payload: m.Payload}
		msgs, checked = s.msg1[:], true
	case c.Syscall.Kind == bpf.SendTo:
		p, errno := s.payload(typ, []remoteBuf{{c.Args[1], c.Args[2]}})
		if errno != 0 {
			return Result{Errno: errno}
		}
		s.msg1[0] = rawsock.Msg{Name: c.Msgs[0].Name, Payload: p}
		msgs = s.msg1[:]
	default:
		if len(c.Msgs) == 1 {
			msgs = s.msg1[:0] // a sendmsg's one message: no allocation
		}
		for i, m := range c.Msgs {
			p, errno := s.msgPayload(typ, m)
			if errno != 0 {
				if i == 0 {
					return Result{Errno: errno}
				}
				break // sendmmsg sends what comes before a bad message
			}
			msgs = append(msgs, rawsock.Msg{Name: m.Name, Control: m.Control, Payload: p})
		}
	}
	defer func() {
		for _, m := range msgs {
			decode.PutPayloadBuf(m.Payload)
		}
	}()
	if !checked && !c.Pending() {
		return left // what was read may be another task's
	}
	if s.family == unix.AF_NETLINK {
		fds, errno := s.netlinkFds(msgs)
		defer closeFds(fds)
		if errno != 0 {
			return Result{Errno: errno}
		}
	}
	var r Result
	if c.Syscall.Kind == bpf.SendMMsg {
		r = s.sendmmsg(msgs, flags)
	} else {
		n, errno := s.sysSendmsg(&msgs[0], flags|unix.MSG_NOSIGNAL)
		r = Result{Val: int64(n), Errno: errno}
	}
	s.sigpipe(r.Errno, flags)
	return r
}

// sendStream makes a stream send (TCP, with or without Fast Open; unix
// stream). The payload is read and sent in windows of at most
// maxStreamSend bytes, so that a long blocking send sends it all, as in
// the kernel, without holding it all in memory; a short send (a
// non-blocking socket whose buffer filled) ends it with the count so far.
// Only the first window carries the address, the control data and
// MSG_FASTOPEN: it connects, the rest go over the connection. (Without
// MSG_FASTOPEN a connected TCP socket ignores the address, and an
// unconnected one fails as in the kernel.)
func (s *Borrowed) sendStream(c *Call, flags int) Result {
	var bufs []remoteBuf
	if c.Syscall.Kind == bpf.SendTo {
		bufs = []remoteBuf{{c.Args[1], c.Args[2]}}
	} else {
		var errno unix.Errno
		if bufs, errno = s.iovecs(c.Msgs[0]); errno != 0 {
			return Result{Errno: errno}
		}
	}
	m := rawsock.Msg{Name: c.Msgs[0].Name, Control: c.Msgs[0].Control}
	var sent int64
	for first := true; first || len(bufs) > 0; first = false {
		p, errno := s.payload(unix.SOCK_STREAM, bufs)
		if errno == 0 && !c.Pending() {
			if sent == 0 {
				decode.PutPayloadBuf(p)
				return left // what was read may be another task's
			}
			errno = unix.EPERM
		}
		var n int
		if errno == 0 {
			m.Payload = p
			n, errno = s.sysSendmsg(&m, flags|unix.MSG_NOSIGNAL)
			decode.PutPayloadBuf(p)
		}
		if errno != 0 {
			if sent > 0 {
				break // the kernel, too, returns what it sent before an error
			}
			s.sigpipe(errno, flags)
			return Result{Errno: errno}
		}
		sent += int64(n)
		if n < len(p) {
			break
		}
		bufs = skip(bufs, uint64(n))
		m.Name, m.Control, flags = nil, nil, flags&^unix.MSG_FASTOPEN
	}
	return Result{Val: sent}
}

// sigpipe sends the caller the SIGPIPE the kernel would have sent it
// with EPIPE (the supervisor's own sends pass MSG_NOSIGNAL).
func (s *Borrowed) sigpipe(errno unix.Errno, flags int) {
	if errno == unix.EPIPE && flags&unix.MSG_NOSIGNAL == 0 {
		unix.PidfdSendSignal(s.pidfd, unix.SIGPIPE, nil, 0)
	}
}

// sendmmsg sends the messages in one call, as the target would have, and
// writes each sent message's msg_len back into the target's vector.
func (s *Borrowed) sendmmsg(msgs []rawsock.Msg, flags int) Result {
	if len(msgs) == 0 {
		return Result{}
	}
	n, lens, errno := s.sysSendmmsg(msgs, flags|unix.MSG_NOSIGNAL)
	if n > 0 {
		writeLens(s.call.TID, s.call.Args[1], lens[:n])
		return Result{Val: int64(n)}
	}
	return Result{Errno: errno}
}

// writeLens stores msg_len of the first len(lens) mmsghdrs at vec. A
// failure is the target's own bad pointer: the kernel too returns the
// count sent and loses the length.
func writeLens(tid int, vec uint64, lens []uint32) {
	local := make([]byte, 4*len(lens))
	liov := make([]unix.Iovec, len(lens))
	riov := make([]unix.RemoteIovec, len(lens))
	for i, l := range lens {
		binary.NativeEndian.PutUint32(local[4*i:], l)
		liov[i] = unix.Iovec{Base: &local[4*i]}
		liov[i].SetLen(4)
		riov[i] = unix.RemoteIovec{Base: uintptr(vec) + uintptr(i*decode.SizeofMmsghdr+decode.SizeofMsghdr), Len: 4}
	}
	unix.ProcessVMWritev(tid, liov, riov, 0)
}
