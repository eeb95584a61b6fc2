package decode

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/bpf"
	"github.com/nettrap/nettrap/procfs"
	"github.com/nettrap/nettrap/supervisor/internal/ascaller"
	"github.com/nettrap/nettrap/supervisor/internal/namespace"
)

// The namespaces a call acts in, as the decoder and the emulator ask.

// inStartingNetns reports whether the calling thread is in the network
// namespace nettrap started the command in. The thread cannot change
// namespace while it is stopped in the call (setns and unshare act on the
// caller only), so the answer holds until the call is answered. When it
// cannot be told (the thread is gone) the answer is yes: the strict one.
func (c *Call) inStartingNetns() bool {
	if c.Netns == nil {
		return true
	}
	id, err := procfs.Namespace(procfs.TaskPath(c.TID, "ns/net"))
	return err != nil || id == c.Netns.ID
}

// socketInStartingNetns reports whether descriptor fd of the caller is a
// socket of the starting namespace: a socket ioctl acts on the socket's
// namespace, not the caller's. The socket is borrowed with pidfd_getfd
// and asked for its SO_NETNS_COOKIE. Where that cannot be done (Docker's
// default profile denies pidfd_getfd; a kernel without the cookie) the
// calling thread's namespace decides. A descriptor that is not open, or
// not a socket, changes no namespace: the kernel fails the ioctl.
func (c *Call) socketInStartingNetns(fd int) bool {
	if c.Netns == nil || c.Netns.Cookie == 0 {
		return c.inStartingNetns()
	}
	cookie, err := c.socketCookie(fd)
	switch {
	case err == nil:
		return cookie == c.Netns.Cookie
	case errors.Is(err, unix.EBADF), errors.Is(err, unix.ENOTSOCK):
		return false
	}
	return c.inStartingNetns()
}

func (c *Call) socketCookie(fd int) (uint64, error) {
	sfd, err := c.borrow(fd)
	if err != nil {
		return 0, err
	}
	defer unix.Close(sfd)
	return namespace.SocketCookie(sfd)
}

// borrow takes a copy of the caller's descriptor fd (pidfd_getfd); the
// caller closes it.
func (c *Call) borrow(fd int) (int, error) {
	pidfd, err := OpenPidfd(c)
	if err != nil {
		return -1, err
	}
	defer unix.Close(pidfd)
	sfd, err := unix.PidfdGetfd(pidfd, fd, 0)
	if err != nil {
		return -1, os.NewSyscallError("pidfd_getfd", err)
	}
	return sfd, nil
}

// treeNetns answers Task.TreeNetns for c (see task.TreeNetns).
func (c *Call) treeNetns() bool {
	if !c.Netns.HasTree() || c.Syscall.Foreign || c.Err != 0 {
		return false
	}
	switch c.Syscall.Kind {
	case bpf.Socket:
		return c.Netns.OwnsThread(c.TID)
	case bpf.Connect, bpf.SendTo, bpf.SendMsg, bpf.SendMMsg:
		if !c.Emulating {
			return false // the kernel would look the descriptor up again
		}
		sfd, err := c.borrow(int(int32(c.Args[0])))
		if err != nil {
			return false
		}
		defer unix.Close(sfd)
		return c.Netns.OwnsSocket(sfd)
	}
	return false
}

// PidfdThread tells whether the kernel opens a pidfd on a thread
// (PIDFD_THREAD, 6.9+), asking as OpenPidfd does first, for this thread;
// err says why pidfd_open failed otherwise (EINVAL: before 6.9).
func PidfdThread() (bool, error) {
	fd, err := unix.PidfdOpen(unix.Gettid(), unix.PIDFD_THREAD)
	if err != nil {
		return false, os.NewSyscallError("pidfd_open", err)
	}
	unix.Close(fd)
	return true, nil
}

// OpenPidfd opens a pidfd on the calling thread (PIDFD_THREAD, 6.9+), or
// on its thread group where the kernel refuses that (before 6.9), and checks that the
// notification is still pending afterwards: only then does the pidfd name
// the caller (its tid may have been reused by another task in between).
// errGone: the caller left the call.
func OpenPidfd(c *Call) (int, error) {
	fd, err := unix.PidfdOpen(c.TID, unix.PIDFD_THREAD)
	if err == unix.EINVAL {
		tgid, terr := procfs.ThreadGroup(c.TID)
		if terr != nil {
			return -1, ascaller.ErrGone
		}
		fd, err = unix.PidfdOpen(tgid, 0)
	}
	if err == unix.ESRCH {
		return -1, ascaller.ErrGone
	}
	if err != nil {
		return -1, os.NewSyscallError("pidfd_open", err)
	}
	if !c.Pending() {
		unix.Close(fd)
		return -1, ascaller.ErrGone
	}
	return fd, nil
}
