package namespace

import (
	"os"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/procfs"
)

// Starting is the network namespace the command started in: the one
// of the thread that forked it. nettrap guards that namespace; one the
// test makes for itself is its own business.
type Starting struct {
	ID procfs.NsID
	// Cookie is the namespace's SO_NETNS_COOKIE (5.14+), 0 when the
	// kernel has none: then a socket's namespace cannot be told, and the
	// calling thread's stands in for it.
	Cookie uint64
	// tree is the command's own user namespace (treens.go), once known.
	tree treeUserns
}

// Read reads the namespace of the calling thread, which must
// be locked (it is the thread that forks the command).
func Read() (Starting, error) {
	id, err := procfs.Namespace(procfs.ThreadSelfPath("ns/net"))
	if err != nil {
		return Starting{}, err
	}
	s := Starting{ID: id}
	if fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0); err == nil {
		s.Cookie, _ = SocketCookie(fd)
		unix.Close(fd)
	}
	return s, nil
}

func SocketCookie(fd int) (uint64, error) {
	v, err := unix.GetsockoptUint64(fd, unix.SOL_SOCKET, unix.SO_NETNS_COOKIE)
	if err != nil {
		return 0, os.NewSyscallError("getsockopt(SO_NETNS_COOKIE)", err)
	}
	return v, nil
}
