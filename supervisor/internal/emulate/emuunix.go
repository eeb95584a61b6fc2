package emulate

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/bpf"
	"github.com/nettrap/nettrap/supervisor/internal/ascaller"
	"github.com/nettrap/nettrap/supervisor/internal/decode"
	"github.com/nettrap/nettrap/supervisor/internal/rawsock"
)

// Unix and netlink calls made by nettrap.
//
// A call answered CONTINUE is looked up again by the kernel, descriptor
// included: another thread can dup2() an inet socket onto the number
// that was checked, and rewrite the address, in between. So an allowed
// connect or send on a unix or netlink socket is made by nettrap too, on
// the socket it borrowed, with the bytes it checked (emulate.go).
//
// Unix: a path name is resolved as the caller would resolve it, with its
// credentials (a caller thread, internal/ascaller); an abstract or unnamed
// address belongs to the socket's own network namespace, and is made on
// a caller thread only when the caller's credentials differ from
// nettrap's (a stream connect records them as the peer's, a send
// attaches them for SO_PASSCRED). SCM_RIGHTS names descriptors of the
// caller's table: each is borrowed in turn and the message rebuilt with
// nettrap's numbers. SCM_CREDENTIALS cannot be made faithfully (the
// kernel checks them against the sender, nettrap): not emulated. A path
// through /proc/self names the caller's descriptors, not nettrap's
// (procself.go).
//
// Netlink: the kernel checks a request that names no destination against
// both the socket's opener and the sender (__netlink_ns_capable: the
// socket file's credentials, and the sender's capabilities, when
// NETLINK_SKB_DST is unset), and one with a destination against the
// sender alone. Made by nettrap, a send that names the kernel is
// therefore made without its address, on a socket whose peer is the
// kernel (its default): the kernel then checks the caller's own
// capabilities (the opener's) as well as nettrap's, never nettrap's
// alone. A send or connect that names another destination (a port, a
// group), which the kernel checks against the sender alone, is not
// emulated; nor is control data.

// makeUnix makes a call on a unix socket.
func (e *Emulator) makeUnix(s *Borrowed, c *Call, typ int, mayBlock bool) (r Result, done, wouldBlock bool) {
	defer keepMsgs(c)()
	if c.Syscall.Kind == bpf.Connect {
		// A datagram connect never waits (see blocks): worth a
		// getsockopt under the ptrace engine, which makes a call that
		// may wait aside.
		typ, _ = rawsock.SockoptInt(s.FD, unix.SO_TYPE)
	}
	if !mayBlock && c.Syscall.Kind == bpf.Connect && s.blocks(c, typ) {
		return Result{}, false, true // made aside: spare the work twice
	}
	paths, relative := unixPaths(c)
	x, err := e.callerPool().Context(c.TID, s.pidfd, paths, relative)
	switch {
	case errors.Is(err, ErrGone):
		return left, true, false
	case err != nil:
		r, done = e.Cannot(c, err)
		return r, done, false
	}
	defer x.Close()
	// The names as checked: the rewrites below change what is made, not
	// what a --sealed rule names (checkUnixPeers).
	var checked [][]byte
	if c.Peer != nil {
		checked = make([][]byte, len(c.Msgs))
		for i := range c.Msgs {
			checked[i] = c.Msgs[i].Name
		}
	}
	via, procFds, errno, err := callerProcSelf(c, x)
	defer closeFds(procFds)
	switch {
	case errors.Is(err, ErrGone):
		return left, true, false
	case err != nil:
		r, done = e.Cannot(c, err)
		return r, done, false
	case errno != 0:
		return Result{Errno: errno}, true, false
	}
	if x.Cwd >= 0 && x.Root < 0 && x.Creds == nil {
		x.ViaProc = viaProcCwd(c, x.Cwd)
	}
	rights, errno, err := s.translateRights(c)
	defer closeFds(rights)
	switch {
	case err != nil:
		r, done = e.Cannot(c, err)
		return r, done, false
	case errno != 0:
		return Result{Errno: errno}, true, false
	}
	// What was read of /proc/TID may be another task's if the caller left
	// the call. (A tracee cannot: its tid stays until its tracer reaps
	// it, and the tracer waits for this answer.)
	if !c.Holder.KeepsTID() && !c.Pending() {
		return left, true, false
	}
	s.via = via
	if c.Peer == nil {
		return s.makeNow(c, typ, mayBlock)
	}
	u, r, stop := s.checkUnixPeers(c, typ, checked)
	defer u.close()
	if stop {
		return r, true, false
	}
	r, done, wouldBlock = s.makeNow(c, typ, mayBlock)
	if done && c.Syscall.Kind == bpf.Connect {
		r = s.verifyListener(c, u.verify, r)
	}
	return r, done, wouldBlock
}

// keepMsgs saves the names and control data of c's messages, which the
// unix and netlink paths rewrite for their own call (descriptor numbers,
// paths, a stripped address) and may cut short (translateRights); the
// function it returns puts them back, so that a call made again (aside,
// by the ptrace engine, when the first try would have blocked) starts
// from what was checked.
func keepMsgs(c *Call) func() {
	all := c.Msgs
	saved := make([][2][]byte, len(all))
	for i, m := range all {
		saved[i] = [2][]byte{m.Name, m.Control}
	}
	return func() {
		c.Msgs = all
		for i := range all {
			all[i].Name, all[i].Control = saved[i][0], saved[i][1]
		}
	}
}

// callerPool returns the emulator's caller threads (made on first use).
func (e *Emulator) callerPool() *ascaller.Pool {
	e.callersOnce.Do(func() { e.callers = ascaller.NewPool() })
	return e.callers
}

// unixPaths tells whether some message names a unix path, and whether
// some such path is relative.
func unixPaths(c *Call) (paths, relative bool) {
	for _, m := range c.Msgs {
		if len(m.Name) > 2 && binary.NativeEndian.Uint16(m.Name) == unix.AF_UNIX && m.Name[2] != 0 {
			paths = true
			relative = relative || m.Name[2] != '/'
		}
	}
	return paths, relative
}

// viaProcCwd rewrites every relative unix path of c to start at
// /proc/self/fd/CWD/, cwd being nettrap's copy of the caller's working
// directory, when they all fit in sun_path: the call can then be made on
// any thread (no hop to a caller thread). Only where the caller's root is
// nettrap's: the walk from there is the caller's own (the magic link
// lands on its working directory, ".." and absolute symlinks meet the
// same root), and no name is visible to a peer (a stream peer sees the
// listener's bound name, a datagram's receiver the sender's).
func viaProcCwd(c *Call, cwd int) bool {
	prefix := "/proc/self/fd/" + strconv.Itoa(cwd) + "/"
	names := make([][]byte, len(c.Msgs))
	for i, m := range c.Msgs {
		if len(m.Name) <= 2 || binary.NativeEndian.Uint16(m.Name) != unix.AF_UNIX || m.Name[2] == 0 || m.Name[2] == '/' {
			continue
		}
		rel := m.Name[2:]
		if n := bytes.IndexByte(rel, 0); n >= 0 {
			rel = rel[:n]
		}
		if len(prefix)+len(rel) >= sizeofSunPath {
			return false
		}
		name := make([]byte, 2, 2+len(prefix)+len(rel)+1)
		binary.NativeEndian.PutUint16(name, unix.AF_UNIX)
		name = append(append(append(name, prefix...), rel...), 0)
		names[i] = name
	}
	for i, n := range names {
		if n != nil {
			c.Msgs[i].Name = n
		}
	}
	return true
}

// sizeofSunPath is the size of sockaddr_un's sun_path.
const sizeofSunPath = 108

// errCredentials: SCM_CREDENTIALS are checked against the sender.
var errCredentials = errors.New("SCM_CREDENTIALS would be checked against nettrap, not the caller")

// translateRights replaces the caller's descriptor numbers in every
// SCM_RIGHTS message of the call by copies in nettrap's table (the
// message's control data is rebuilt; the caller's bytes are not
// touched), and returns the copies, which the caller closes after the
// call. A bad descriptor in message 0 is the call's errno (EBADF, as in
// the kernel); in a later message of a sendmmsg it ends the vector there,
// as the kernel's sendmmsg stops there.
func (s *Borrowed) translateRights(c *Call) (fds []int, errno unix.Errno, err error) {
	for i := range c.Msgs {
		ctl, add, errno, err := s.rights(c.Msgs[i].Control)
		fds = append(fds, add...)
		if err != nil {
			return fds, 0, err
		}
		if errno != 0 {
			if i == 0 {
				return fds, errno, nil
			}
			c.Msgs = c.Msgs[:i]
			return fds, 0, nil
		}
		c.Msgs[i].Control = ctl
	}
	return fds, 0, nil
}

// rights translates one message's control data (see translateRights).
// A malformed message ends the walk, as in the kernel, which then fails
// the call itself.
func (s *Borrowed) rights(ctl []byte) (out []byte, fds []int, errno unix.Errno, err error) {
	out = ctl
	ne := binary.NativeEndian
	for off := 0; off+decode.SizeofCmsghdr <= len(ctl); {
		n := ne.Uint64(ctl[off:])
		level := int32(ne.Uint32(ctl[off+8:]))
		typ := int32(ne.Uint32(ctl[off+12:]))
		if n < decode.SizeofCmsghdr || n > uint64(len(ctl)-off) {
			break
		}
		if level == unix.SOL_SOCKET && typ == unix.SCM_CREDENTIALS {
			return out, fds, 0, errCredentials
		}
		if level == unix.SOL_SOCKET && typ == unix.SCM_RIGHTS {
			if &out[0] == &ctl[0] {
				out = append([]byte(nil), ctl...)
			}
			for p := off + decode.SizeofCmsghdr; p+4 <= off+int(n); p += 4 {
				fd, e := rawsock.PidfdGetfd(s.pidfd, int(int32(ne.Uint32(ctl[p:]))))
				switch e {
				case 0:
				case unix.EBADF:
					return out, fds, unix.EBADF, nil
				case unix.ESRCH:
					return out, fds, unix.EPERM, nil // the caller is gone
				default:
					return out, fds, 0, fmt.Errorf("SCM_RIGHTS: %w", os.NewSyscallError("pidfd_getfd", e))
				}
				fds = append(fds, fd)
				ne.PutUint32(out[p:], uint32(fd))
			}
		}
		off += int((n + 7) &^ 7)
	}
	return out, fds, 0, nil
}

// makeNetlink makes a call on a netlink socket.
func (e *Emulator) makeNetlink(s *Borrowed, c *Call, typ int, mayBlock bool) (r Result, done, wouldBlock bool) {
	defer keepMsgs(c)()
	connect := c.Syscall.Kind == bpf.Connect
	stripped := false
	for i := range c.Msgs {
		m := &c.Msgs[i]
		if len(m.Control) > 0 {
			r, done = e.Cannot(c, errors.New("netlink control data"))
			return r, done, false
		}
		switch netlinkDest(m.Name) {
		case nlKernel:
			if !connect {
				m.Name, stripped = nil, true
			}
		case nlOther:
			r, done = e.Cannot(c, errors.New("a netlink destination other than the kernel"))
			return r, done, false
		}
	}
	if stripped {
		sa, err := unix.Getpeername(s.FD)
		nl, ok := sa.(*unix.SockaddrNetlink)
		if err != nil || !ok || nl.Pid != 0 || nl.Groups != 0 {
			r, done = e.Cannot(c, errors.New("a netlink socket connected to another peer than the kernel"))
			return r, done, false
		}
	}
	return s.makeNow(c, typ, mayBlock)
}

// netlink destinations, as a message's address names them.
const (
	nlNone    = iota // no address: the socket's peer
	nlInvalid        // refused by the kernel (EINVAL) before anything is checked
	nlKernel         // nl_pid 0, nl_groups 0
	nlOther          // a port or a group: checked against the sender alone
)

func netlinkDest(name []byte) int {
	switch {
	case len(name) == 0:
		return nlNone
	case len(name) < decode.SizeofSockaddrNetlink || binary.NativeEndian.Uint16(name) != unix.AF_NETLINK:
		return nlInvalid
	}
	if binary.NativeEndian.Uint32(name[4:]) == 0 && binary.NativeEndian.Uint32(name[8:]) == 0 {
		return nlKernel
	}
	return nlOther
}

// sysConnect, sysSendmsg and sysSendmmsg make the borrowed socket's
// syscalls as the caller (s.via), or directly. (The calls as the caller
// are functions of their own: a closure's captured results are moved to
// the heap on entry, which the direct path would pay on every call.)
func (s *Borrowed) sysConnect(name []byte) unix.Errno {
	if s.via == nil {
		return rawsock.Connect(s.FD, name)
	}
	return s.viaConnect(name)
}

func (s *Borrowed) viaConnect(name []byte) (errno unix.Errno) {
	if err := s.via.Run(func() { errno = rawsock.Connect(s.FD, name) }); err != nil {
		return s.viaFailed(err)
	}
	return errno
}

func (s *Borrowed) sysSendmsg(m *rawsock.Msg, flags int) (int, unix.Errno) {
	if s.via == nil {
		return rawsock.Sendmsg(s.FD, m, flags)
	}
	return s.viaSendmsg(m, flags)
}

func (s *Borrowed) viaSendmsg(m *rawsock.Msg, flags int) (n int, errno unix.Errno) {
	if err := s.via.Run(func() { n, errno = rawsock.Sendmsg(s.FD, m, flags) }); err != nil {
		return 0, s.viaFailed(err)
	}
	return n, errno
}

func (s *Borrowed) sysSendmmsg(msgs []rawsock.Msg, flags int) (int, []uint32, unix.Errno) {
	if s.via == nil {
		return rawsock.Sendmmsg(s.FD, msgs, flags)
	}
	return s.viaSendmmsg(msgs, flags)
}

func (s *Borrowed) viaSendmmsg(msgs []rawsock.Msg, flags int) (n int, lens []uint32, errno unix.Errno) {
	if err := s.via.Run(func() { n, lens, errno = rawsock.Sendmmsg(s.FD, msgs, flags) }); err != nil {
		return 0, nil, s.viaFailed(err)
	}
	return n, lens, errno
}

// viaFailed: a caller thread could not take the caller's state. The call
// was not made; it fails closed, and the supervisor says why.
func (s *Borrowed) viaFailed(err error) unix.Errno {
	s.e.Report(fmt.Errorf("allowed %s by pid %d failed: %w", s.call.Syscall.Name, s.call.TID, err))
	return unix.EPERM
}
