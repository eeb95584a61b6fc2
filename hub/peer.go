package hub

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/procfs"
)

// Who may speak for a test binary. A confined process could otherwise
// register as an inner nettrap and answer for the tests under it. The
// kernel gives the pid that connected (SO_PEERCRED) and, with every read,
// the pid that wrote the bytes (credConn). The rules:
//
//   - every byte comes from the process that connected: a socket handed
//     to, or inherited by, another process speaks for no one;
//   - that process runs the nettrap executable, at every message, and is
//     the same process (same start time: its pid was not reused);
//   - registration ends with a challenge the process must echo after the
//     outer has seen it run nettrap: a process that connected and then
//     exec'd nettrap cannot answer, since the nettrap it became never
//     reads a socket it did not open.

// peer is the process at the other end of an inner's connection.
type peer struct {
	pid   int
	start uint64 // procfs.StartTime
}

// identify reads who connected nc and wraps nc so that only that process
// may write on it.
func (s *Server) identify(nc net.Conn) (peer, *credConn, error) {
	pid, err := peerPID(nc)
	if err != nil {
		return peer{}, nil, fmt.Errorf("the peer's pid is unknown: %w", err)
	}
	uc, ok := nc.(*net.UnixConn)
	if !ok {
		return peer{}, nil, errors.New("not a unix socket")
	}
	if pid == os.Getpid() || procfs.IsDescendant(os.Getpid(), pid) {
		// This nettrap made the connect itself, for a confined process
		// (a unix connect is made by the supervisor: issue 19), so the
		// kernel names it; or, where this hub runs under another nettrap
		// (nettrap's own tests under nettrap), that one did. The process
		// that connected is then the one that writes first: the kernel
		// names that writer, who must run nettrap and answer the
		// challenge like any other.
		if pid, err = firstWriter(uc); err != nil {
			return peer{}, nil, err
		}
	}
	if pid <= 0 {
		return peer{}, nil, errors.New("the peer is in a pid namespace this nettrap cannot see")
	}
	start, err := procfs.StartTime(pid)
	if err != nil {
		return peer{}, nil, fmt.Errorf("pid %d: %w", pid, err)
	}
	cc, err := newCredConn(uc, pid)
	if err != nil {
		return peer{}, nil, err
	}
	return peer{pid: pid, start: start}, cc, nil
}

// check tells whether p still runs nettrap and is still the process that
// connected. Once registered, a p that has exited passes: what it wrote
// (the kernel says it did) it wrote while it ran nettrap, which never
// execs anything else in its own process. An inner's last record may well
// be read after it exited.
func (s *Server) check(p peer, registered bool) error {
	if runs(p.pid, s.exe) {
		// After the executable: a pid reused in between shows here.
		st, err := procfs.StartTime(p.pid)
		switch {
		case err == nil && st == p.start:
			return nil
		case err == nil:
			return fmt.Errorf("pid %d is not the process that connected (its pid was reused)", p.pid)
		case registered && errors.Is(err, fs.ErrNotExist):
			// It exited between the two reads: as below.
			return nil
		}
		return fmt.Errorf("pid %d: %w", p.pid, err)
	}
	if registered && p.exited() {
		return nil
	}
	return fmt.Errorf("pid %d is not running nettrap", p.pid)
}

// exited: p is gone, or is the same process and a zombie.
func (p peer) exited() bool {
	st, err := procfs.StartTime(p.pid)
	if errors.Is(err, fs.ErrNotExist) {
		return true
	}
	return err == nil && st == p.start && procfs.Exited(p.pid)
}

// recvFrom reads a message and checks that its writer may still speak.
func (s *Server) recvFrom(c *conn, p peer, registered bool) (message, error) {
	m, err := c.recv()
	if err != nil {
		return m, err
	}
	if err := s.check(p, registered); err != nil {
		return m, err
	}
	return m, nil
}

// register runs the registration of p: register, challenge, confirm. It
// answers a refusal itself, and reports whether p may be added.
func (s *Server) register(c *conn, p peer) (message, bool) {
	refuse := func(format string, a ...any) (message, bool) {
		reason := fmt.Sprintf(format, a...)
		s.notef("refused the registration of pid %d: %s", p.pid, reason)
		c.send(message{Op: opError, Error: reason})
		return message{}, false
	}
	m, err := s.recvFrom(c, p, false)
	switch {
	case errors.Is(err, io.EOF):
		return message{}, false // ServedByAncestor's probe
	case err != nil:
		return refuse("%v", err)
	case m.Op != opRegister:
		return refuse("first message must be register, not %s", m.Op)
	}
	nonce, err := newNonce()
	if err != nil {
		return refuse("%v", err)
	}
	if err := c.send(message{Op: opChallenge, Nonce: nonce}); err != nil {
		return message{}, false
	}
	r, err := s.recvFrom(c, p, false)
	switch {
	case err != nil:
		return refuse("%v", err)
	case r.Op != opConfirm || r.Nonce != nonce:
		return refuse("the challenge was not answered")
	}
	return m, true
}

func newNonce() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("challenge: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// runs tells whether pid runs the executable exe (same file: device and
// inode, whatever the path).
func runs(pid int, exe string) bool {
	want, err := os.Stat(exe)
	if err != nil {
		return false
	}
	got, err := os.Stat(procfs.TaskPath(pid, "exe"))
	return err == nil && os.SameFile(want, got)
}

// firstWriter peeks at the first bytes on uc and returns the pid the
// kernel names as their writer.
func firstWriter(uc *net.UnixConn) (int, error) {
	if err := passCred(uc); err != nil {
		return 0, err
	}
	b, oob := make([]byte, 1), make([]byte, unix.CmsgSpace(unix.SizeofUcred))
	raw, err := uc.SyscallConn()
	if err != nil {
		return 0, err
	}
	var n, on int
	var rerr error
	if err := raw.Read(func(fd uintptr) bool {
		n, on, _, _, rerr = unix.Recvmsg(int(fd), b, oob, unix.MSG_PEEK)
		return rerr != unix.EAGAIN
	}); err != nil {
		return 0, err
	}
	if rerr != nil {
		return 0, os.NewSyscallError("recvmsg", rerr)
	}
	if n == 0 {
		// Closed before a word (the kernel still fills in credentials,
		// with pid 0: nobody wrote).
		return 0, io.EOF
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:on])
	if err != nil {
		return 0, fmt.Errorf("%w: control data: %v", errProtocol, err)
	}
	for i := range msgs {
		if cr, err := unix.ParseUnixCredentials(&msgs[i]); err == nil {
			return int(cr.Pid), nil
		}
	}
	return 0, fmt.Errorf("%w: the kernel did not name the writer", errProtocol)
}
