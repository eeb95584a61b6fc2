package supervisor

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
	if got := socketTypeName(unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_SCTP); got != "sctp" {
		t.Errorf("sctp: %q", got)
	}
	if got := socketTypeName(unix.AF_PACKET, unix.SOCK_RAW, 0); got != "packet" {
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
