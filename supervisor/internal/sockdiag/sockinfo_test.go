package sockdiag

import (
	"net"
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/procfs"
)

// Both ways of telling a socket's type agree, on this process's own
// sockets (no filter involved).
func TestSocketType(t *testing.T) {
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	uds, err := net.Listen("unix", t.TempDir()+"/s")
	if err != nil {
		t.Fatal(err)
	}
	defer uds.Close()
	for _, tt := range []struct {
		fd   int
		want string
	}{
		{fdOf(t, tcp.(*net.TCPListener)), "tcp"},
		{fdOf(t, udp.(*net.UDPConn)), "udp"},
		{fdOf(t, uds.(*net.UnixListener)), "unix"},
	} {
		pid := os.Getpid()
		if got := procfs.SocketKind(pid, tt.fd); got != tt.want {
			t.Errorf("fd %d by inode: %q, want %q", tt.fd, got, tt.want)
		}
		byPidfd := socketTypeByPidfd(pid, tt.fd)
		if tt.want == "unix" {
			tt.want = "unix-stream"
		}
		if byPidfd != "" && byPidfd != tt.want {
			t.Errorf("fd %d by pidfd: %q, want %q", tt.fd, byPidfd, tt.want)
		}
	}
	if got := SocketTypeName(unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_SCTP); got != "sctp" {
		t.Errorf("sctp: %q", got)
	}
	if got := SocketTypeName(unix.AF_PACKET, unix.SOCK_RAW, 0); got != "packet" {
		t.Errorf("packet: %q", got)
	}
}

func fdOf(t *testing.T, c interface{ File() (*os.File, error) }) int {
	t.Helper()
	f, err := c.File() // a dup: same socket, same inode
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return int(f.Fd())
}

// The socket's own protocol name (system.sockprotoname) tells its type
// where pidfd_getfd is refused, also for a socket not yet bound, which
// the /proc/PID/net tables do not list: a fresh UDP socket's connect.
func TestSocketTypeByXattr(t *testing.T) {
	for _, tc := range []struct {
		domain, typ, proto int
		want               string
	}{
		{unix.AF_INET6, unix.SOCK_DGRAM, 0, "udp"},
		{unix.AF_INET, unix.SOCK_DGRAM, 0, "udp"},
		{unix.AF_INET, unix.SOCK_STREAM, 0, "tcp"},
		{unix.AF_INET6, unix.SOCK_STREAM, 0, "tcp"},
		{unix.AF_UNIX, unix.SOCK_STREAM, 0, "unix-stream"},
		{unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE, "netlink"},
	} {
		fd, err := unix.Socket(tc.domain, tc.typ|unix.SOCK_CLOEXEC, tc.proto)
		if err != nil {
			t.Logf("socket(%d, %d, %d): %v", tc.domain, tc.typ, tc.proto, err)
			continue
		}
		got := socketTypeByXattr(os.Getpid(), fd)
		unix.Close(fd)
		if got != tc.want {
			t.Errorf("socket(%d, %d, %d) by its protocol name: %q, want %q", tc.domain, tc.typ, tc.proto, got, tc.want)
		}
	}
	for name, want := range map[string]string{"TCPv6": "tcp", "MPTCP": "tcp", "UDPLITEv6": "udp", "PINGv6": "icmp",
		"RAW": "raw", "UNIX-STREAM": "unix-stream", "UNIX": "unix", "SCTPv6": "sctp", "PACKET": "packet", "AF_VSOCK": ""} {
		if got := protoNameType(name); got != want {
			t.Errorf("protoNameType(%q) = %q, want %q", name, got, want)
		}
	}
}
