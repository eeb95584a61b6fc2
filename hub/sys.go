package hub

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/procfs"
)

// peerPID is the pid of the process at the other end of a Unix socket,
// as the kernel saw it connect: an inner cannot name another process.
func peerPID(nc net.Conn) (int, error) {
	uc, ok := nc.(*net.UnixConn)
	if !ok {
		return 0, errors.New("not a unix socket")
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return 0, err
	}
	var cred *unix.Ucred
	var serr error
	if err := raw.Control(func(fd uintptr) {
		cred, serr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return 0, err
	}
	if serr != nil {
		return 0, os.NewSyscallError("getsockopt(SO_PEERCRED)", serr)
	}
	return int(cred.Pid), nil
}

type deadliner interface {
	SetDeadline(time.Time) error
	SetWriteDeadline(time.Time) error
}

func setDeadline(rw any, t time.Time) {
	if d, ok := rw.(deadliner); ok {
		d.SetDeadline(t)
	}
}

func setWriteDeadline(rw any, t time.Time) {
	if d, ok := rw.(deadliner); ok {
		d.SetWriteDeadline(t)
	}
}

// Confined reports whether this process runs under a seccomp filter: an
// inner nettrap must be, or it would run the tests unconfined.
func Confined() bool {
	return procfs.SeccompFiltered()
}

// ServedByAncestor checks that the hub at path is served by an ancestor
// of this process: the outer nettrap whose filter confines its whole tree.
// Being under some seccomp filter (Confined) is not enough where every
// process is (WSL2's init installs one for its whole system): a stale or
// forged variable there would have an inner nettrap run a command
// unconfined.
func ServedByAncestor(path string) error {
	nc, err := net.DialTimeout("unix", path, 5*time.Second)
	if err != nil {
		return fmt.Errorf("no nettrap serves the hub: %w", err)
	}
	defer nc.Close()
	pid, err := peerPID(nc)
	if err != nil {
		return fmt.Errorf("the hub's server is unknown: %w", err)
	}
	if pid <= 0 || !procfs.IsDescendant(os.Getpid(), pid) {
		return fmt.Errorf("the hub is served by pid %d, which did not start this process", pid)
	}
	return nil
}

// passCred makes the kernel tell, with every read on the socket, which
// process wrote the bytes (SO_PASSCRED: an SCM_CREDENTIALS message). Set
// on the listening socket, it is inherited by the accepted ones.
func passCred(sc syscall.Conn) error {
	raw, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_PASSCRED, 1)
	}); err != nil {
		return err
	}
	return os.NewSyscallError("setsockopt(SO_PASSCRED)", serr)
}

// errForeignSender: bytes on an inner's connection were written by
// another process than the one that connected.
var errForeignSender = errors.New("written by another process than the one that connected")

// credConn is the outer's end of an inner's connection. The kernel names
// the writer of the bytes of every read (a stream read never joins the
// bytes of two writers); bytes from any process but pid, the one that
// connected, fail the read. So a socket handed on, inherited or kept
// across an exec speaks only for the process that made it.
type credConn struct {
	*net.UnixConn
	pid int
	oob []byte
}

func newCredConn(uc *net.UnixConn, pid int) (*credConn, error) {
	if err := passCred(uc); err != nil {
		return nil, err
	}
	return &credConn{UnixConn: uc, pid: pid, oob: make([]byte, unix.CmsgSpace(unix.SizeofUcred))}, nil
}

func (c *credConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n, oobn, flags, _, err := c.ReadMsgUnix(p, c.oob)
	if n < 0 { // an error, which some paths give with -1
		n = 0
	}
	if n == 0 && err == nil {
		return 0, io.EOF
	}
	if n > 0 {
		if serr := c.checkSender(c.oob[:oobn], flags); serr != nil {
			return 0, serr
		}
	}
	return n, err
}

// checkSender reads the writer's credentials out of a read's control
// data. Descriptors a peer sent along (which cannot fit, the buffer being
// sized for the credentials) would be closed, never kept.
func (c *credConn) checkSender(oob []byte, flags int) error {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return fmt.Errorf("%w: control data: %v", errProtocol, err)
	}
	pid := -1
	for i := range msgs {
		if fds, err := unix.ParseUnixRights(&msgs[i]); err == nil {
			for _, fd := range fds {
				unix.Close(fd)
			}
			return fmt.Errorf("%w: descriptors sent", errProtocol)
		}
		if cr, err := unix.ParseUnixCredentials(&msgs[i]); err == nil {
			pid = int(cr.Pid)
		}
	}
	switch {
	case flags&unix.MSG_CTRUNC != 0:
		return fmt.Errorf("%w: control data truncated", errProtocol)
	case pid == -1:
		return fmt.Errorf("%w: the kernel did not name the writer", errProtocol)
	case pid != c.pid:
		// 0: a process of a pid namespace we cannot see.
		return fmt.Errorf("bytes from pid %d: %w (pid %d)", pid, errForeignSender, c.pid)
	}
	return nil
}
