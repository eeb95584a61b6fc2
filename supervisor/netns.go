package supervisor

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/procfs"
)

// startingNetns is the network namespace the command started in: the one
// of the thread that forked it. nettrap guards that namespace; one the
// test makes for itself is its own business.
type startingNetns struct {
	id procfs.NsID
	// cookie is the namespace's SO_NETNS_COOKIE (5.14+), 0 when the
	// kernel has none: then a socket's namespace cannot be told, and the
	// calling thread's stands in for it.
	cookie uint64
	// tree is the command's own user namespace (treens.go), once known.
	tree treeUserns
}

// readStartingNetns reads the namespace of the calling thread, which must
// be locked (it is the thread that forks the command).
func readStartingNetns() (startingNetns, error) {
	id, err := procfs.Namespace(procfs.ThreadSelfPath("ns/net"))
	if err != nil {
		return startingNetns{}, err
	}
	s := startingNetns{id: id}
	if fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0); err == nil {
		s.cookie, _ = netnsCookie(fd)
		unix.Close(fd)
	}
	return s, nil
}

func netnsCookie(fd int) (uint64, error) {
	v, err := unix.GetsockoptUint64(fd, unix.SOL_SOCKET, unix.SO_NETNS_COOKIE)
	if err != nil {
		return 0, os.NewSyscallError("getsockopt(SO_NETNS_COOKIE)", err)
	}
	return v, nil
}

// inStartingNetns reports whether the calling thread is in the network
// namespace nettrap started the command in. The thread cannot change
// namespace while it is stopped in the call (setns and unshare act on the
// caller only), so the answer holds until the call is answered. When it
// cannot be told (the thread is gone) the answer is yes: the strict one.
func (c *call) inStartingNetns() bool {
	if c.netns == nil {
		return true
	}
	id, err := procfs.Namespace(procfs.TaskPath(c.TID, "ns/net"))
	return err != nil || id == c.netns.id
}

// socketInStartingNetns reports whether descriptor fd of the caller is a
// socket of the starting namespace: a socket ioctl acts on the socket's
// namespace, not the caller's. The socket is borrowed with pidfd_getfd
// and asked for its SO_NETNS_COOKIE. Where that cannot be done (Docker's
// default profile denies pidfd_getfd; a kernel without the cookie) the
// calling thread's namespace decides. A descriptor that is not open, or
// not a socket, changes no namespace: the kernel fails the ioctl.
func (c *call) socketInStartingNetns(fd int) bool {
	if c.netns == nil || c.netns.cookie == 0 {
		return c.inStartingNetns()
	}
	cookie, err := c.socketCookie(fd)
	switch {
	case err == nil:
		return cookie == c.netns.cookie
	case errors.Is(err, unix.EBADF), errors.Is(err, unix.ENOTSOCK):
		return false
	}
	return c.inStartingNetns()
}

func (c *call) socketCookie(fd int) (uint64, error) {
	sfd, err := c.borrow(fd)
	if err != nil {
		return 0, err
	}
	defer unix.Close(sfd)
	return netnsCookie(sfd)
}

// borrow takes a copy of the caller's descriptor fd (pidfd_getfd); the
// caller closes it.
func (c *call) borrow(fd int) (int, error) {
	pidfd, err := openPidfd(c)
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
