package emulate

import (
	"encoding/binary"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/supervisor/internal/nlparse"
	"github.com/nettrap/nettrap/supervisor/internal/rawsock"
)

// translateRouteFds rewrites the descriptor attributes of every message
// (see nlparse.RouteFdOffsets) with copies in nettrap's table, and returns the
// copies, which the caller closes after the call. A negative value names
// no descriptor (IFLA_XDP_FD -1 detaches) and is kept. A bad descriptor
// is the call's errno (EBADF), as the kernel would answer.
func (s *Borrowed) translateRouteFds(msgs []rawsock.Msg) (fds []int, errno unix.Errno, err error) {
	ne := binary.NativeEndian
	for i := range msgs {
		p := msgs[i].Payload
		for _, off := range nlparse.RouteFdOffsets(p) {
			n := int32(ne.Uint32(p[off:]))
			if n < 0 {
				continue
			}
			fd, e := rawsock.PidfdGetfd(s.pidfd, int(n))
			switch e {
			case 0:
			case unix.EBADF:
				return fds, unix.EBADF, nil
			case unix.ESRCH:
				return fds, unix.EPERM, nil // the caller is gone
			default:
				return fds, 0, fmt.Errorf("a descriptor in a netlink request: %w", os.NewSyscallError("pidfd_getfd", e))
			}
			fds = append(fds, fd)
			ne.PutUint32(p[off:], uint32(fd))
		}
	}
	return fds, 0, nil
}

// netlinkFds translates the descriptors of a netlink send's messages
// when the socket speaks rtnetlink (see translateRouteFds). A failure
// other than the caller's own (a bad descriptor) fails the call closed
// (EPERM), and the supervisor says why: the request is not sent with
// numbers that name nettrap's table.
func (s *Borrowed) netlinkFds(msgs []rawsock.Msg) ([]int, unix.Errno) {
	proto, errno := rawsock.SockoptInt(s.FD, unix.SO_PROTOCOL)
	if errno != 0 {
		return nil, errno
	}
	if proto != unix.NETLINK_ROUTE {
		return nil, 0
	}
	fds, errno, err := s.translateRouteFds(msgs)
	if err != nil {
		s.e.Report(fmt.Errorf("allowed %s by pid %d failed: %w", s.call.Syscall.Name, s.call.TID, err))
		return fds, unix.EPERM
	}
	return fds, errno
}

func closeFds(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}
