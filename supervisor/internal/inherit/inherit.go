package inherit

import (
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/procfs"
	"github.com/nettrap/nettrap/supervisor/internal/sockdiag"
)

// passedSocket describes a socket that would reach the command.
type passedSocket struct {
	fd   int
	desc string // "tcp 10.0.0.2:41234 -> 203.0.113.7:80"
}

// CloseSockets closes the inherited network sockets that would
// pass to cmd, telling w about each, and fails if cmd's own stdio or
// ExtraFiles are network sockets.
func CloseSockets(cmd *exec.Cmd, w io.Writer) error {
	if err := checkGivenFiles(cmd); err != nil {
		return err
	}
	for _, s := range inheritedSockets() {
		unix.Close(s.fd)
		fmt.Fprintf(w, "nettrap: closed inherited fd %d, a %s: network sockets are not passed to the command (unix and netlink sockets, pipes and files are)\n", s.fd, s.desc)
	}
	return nil
}

// checkGivenFiles refuses network sockets among the descriptors cmd is
// given explicitly.
func checkGivenFiles(cmd *exec.Cmd) error {
	given := []any{cmd.Stdin, cmd.Stdout, cmd.Stderr} // the child's fds 0, 1, 2, then ExtraFiles
	for _, f := range cmd.ExtraFiles {
		given = append(given, f)
	}
	for fd, g := range given {
		f, ok := g.(*os.File)
		if !ok || f == nil {
			continue // exec makes a pipe for anything else
		}
		if desc, network := networkSocket(int(f.Fd())); network {
			return fmt.Errorf("its %s would be a %s: nettrap does not hand network sockets to the confined command; redirect it to a file or a pipe", childFdName(fd), desc)
		}
	}
	return nil
}

func childFdName(fd int) string {
	if fd < len(stdioNames) {
		return stdioNames[fd]
	}
	return "fd " + strconv.Itoa(fd)
}

var stdioNames = []string{"stdin", "stdout", "stderr"}

// inheritedSockets lists this process's descriptors from 3 up that an exec
// keeps (no FD_CLOEXEC) and that are network sockets. Every descriptor Go
// opens is close-on-exec, so these came from nettrap's parent.
func inheritedSockets() []passedSocket {
	fds, err := procfs.OpenFDs()
	if err != nil {
		return nil
	}
	var out []passedSocket
	for _, fd := range fds {
		if fd <= 2 {
			continue
		}
		flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		if err != nil || flags&unix.FD_CLOEXEC != 0 {
			continue // gone (the directory's own fd), or not passed on
		}
		if desc, network := networkSocket(fd); network {
			out = append(out, passedSocket{fd, desc})
		}
	}
	return out
}

// networkSocket tells whether fd is a socket of a family other than unix
// and netlink, and describes it.
func networkSocket(fd int) (string, bool) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return "", false
	}
	domain, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_DOMAIN)
	if err != nil {
		// A socket that will not say its family: treat it as a network one.
		return "socket of unknown family", true
	}
	if domain == unix.AF_UNIX || domain == unix.AF_NETLINK {
		return "", false
	}
	typ, _ := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE)
	proto, _ := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_PROTOCOL)
	desc := sockdiag.SocketTypeName(domain, typ, proto) + " socket"
	local, lerr := unix.Getsockname(fd)
	peer, perr := unix.Getpeername(fd)
	switch {
	case perr == nil && sockaddrString(peer) != "":
		desc += " " + sockaddrString(local) + " -> " + sockaddrString(peer)
	case lerr == nil && sockaddrString(local) != "":
		desc += " on " + sockaddrString(local)
	}
	return desc, true
}

func sockaddrString(sa unix.Sockaddr) string {
	switch sa := sa.(type) {
	case *unix.SockaddrInet4:
		return netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), uint16(sa.Port)).String()
	case *unix.SockaddrInet6:
		return netip.AddrPortFrom(netip.AddrFrom16(sa.Addr), uint16(sa.Port)).String()
	}
	return ""
}
