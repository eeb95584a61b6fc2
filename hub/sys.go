package hub

import (
	"errors"
	"net"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"
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
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Seccomp:"); ok {
			return strings.TrimSpace(v) == "2"
		}
	}
	return false
}
