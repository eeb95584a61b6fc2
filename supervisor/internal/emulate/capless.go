package emulate

import (
	"errors"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/bpf"
	"github.com/nettrap/nettrap/supervisor/internal/capless"
)

// SendCapless makes c's netlink send on the capability-free thread of m,
// for both engines. ok is false when it cannot (see supervisor's loop.sendCapless).
func SendCapless(m *capless.Maker, c *Call) (val int64, errno unix.Errno, ok bool) {
	n := c.Netlink
	if m == nil || n == nil || n.Control || n.Oversize || len(n.Payloads) != 1 {
		return 0, 0, false
	}
	// Borrowed when the socket was found to be ours (NetlinkSend).
	sfd := n.Sock
	if sfd < 0 {
		return 0, 0, false
	}
	var err error
	flags := int(int32(c.Args[3])) // sendto(fd, buf, len, flags, …)
	if c.Syscall.Kind == bpf.SendMsg {
		flags = int(int32(c.Args[2])) // sendmsg(fd, msg, flags)
	}
	payload, to := n.Payloads[0], n.Dests[0]
	m.Do(func() { err = unix.Sendto(sfd, payload, flags, &to) })
	if err != nil {
		return 0, ErrnoOf(err), true
	}
	return int64(len(payload)), 0, true
}

func ErrnoOf(err error) unix.Errno {
	var en unix.Errno
	if errors.As(err, &en) {
		return en
	}
	return unix.EPERM
}
