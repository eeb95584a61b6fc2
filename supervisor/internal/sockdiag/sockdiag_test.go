package sockdiag

import (
	"encoding/binary"
	"net"
	"net/netip"
	"os"
	"slices"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// diagMsg builds a unix_diag_msg for inode ino with attributes.
func diagMsg(ino uint32, attrs ...[]byte) []byte {
	b := make([]byte, sizeofUnixDiagMsg)
	b[0] = unix.AF_UNIX
	binary.NativeEndian.PutUint32(b[4:], ino)
	for _, a := range attrs {
		b = append(b, a...)
	}
	return b
}

func diagAttr(typ uint16, val []byte) []byte {
	n := 4 + len(val)
	b := make([]byte, (n+3)&^3)
	binary.NativeEndian.PutUint16(b, uint16(n))
	binary.NativeEndian.PutUint16(b[2:], typ)
	copy(b[4:], val)
	return b
}

func le32(v uint32) []byte { return binary.NativeEndian.AppendUint32(nil, v) }

func TestParseUnixDiag(t *testing.T) {
	for _, tc := range []struct {
		name string
		msg  []byte
		want UnixDiag
		bad  bool
	}{
		{"peer", diagMsg(7, diagAttr(netlink.UNIX_DIAG_PEER, le32(42))), UnixDiag{UID: -1, Ino: 7, peer: 42}, false},
		{"path", diagMsg(7, diagAttr(netlink.UNIX_DIAG_NAME, []byte("/run/x.sock"))), UnixDiag{UID: -1, Ino: 7, Name: "/run/x.sock", named: true}, false},
		{"abstract", diagMsg(7, diagAttr(netlink.UNIX_DIAG_NAME, []byte("\x00agent"))), UnixDiag{UID: -1, Ino: 7, Name: "@agent", named: true}, false},
		{"both", diagMsg(9, diagAttr(netlink.UNIX_DIAG_NAME, []byte("/a")), diagAttr(netlink.UNIX_DIAG_PEER, le32(3))),
			UnixDiag{UID: -1, Ino: 9, peer: 3, Name: "/a", named: true}, false},
		{"vfs", diagMsg(7, diagAttr(netlink.UNIX_DIAG_VFS, append(le32(99), le32(0x803)...))), UnixDiag{UID: -1, Ino: 7, vfsIno: 99, vfsDev: 0x803, vfs: true}, false},
		{"short vfs", diagMsg(7, diagAttr(netlink.UNIX_DIAG_VFS, le32(99))), UnixDiag{}, true},
		{"uid", diagMsg(7, diagAttr(unixDiagUID, le32(1000))), UnixDiag{Ino: 7, UID: 1000}, false},
		{"unknown attribute", diagMsg(9, diagAttr(99, []byte{1, 2, 3, 4, 5})), UnixDiag{UID: -1, Ino: 9}, false},
		{"none", diagMsg(5), UnixDiag{UID: -1, Ino: 5}, false},
		{"short header", []byte{unix.AF_UNIX, 0, 0}, UnixDiag{}, true},
		{"not unix", append([]byte{unix.AF_INET}, make([]byte, 15)...), UnixDiag{}, true},
		{"attribute past the end", append(diagMsg(5), 40, 0, 2, 0), UnixDiag{}, true},
		{"short peer", diagMsg(5, diagAttr(netlink.UNIX_DIAG_PEER, []byte{1, 2})), UnixDiag{}, true},
	} {
		got, err := parseUnixDiag(tc.msg)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("%s: got %+v, %v; want %+v (error %t)", tc.name, got, err, tc.want, tc.bad)
		}
	}
}

func TestTakers(t *testing.T) {
	sock := func(ip string, port uint16, state uint8, ino uint32) *netlink.Socket {
		s := &netlink.Socket{State: state, INode: ino}
		s.ID.Source, s.ID.SourcePort = net.ParseIP(ip), port
		return s
	}
	socks := []*netlink.Socket{
		sock("127.0.0.1", 80, tcpListen, 1),
		sock("0.0.0.0", 80, tcpListen, 2),
		sock("::", 80, tcpListen, 3),
		sock("127.0.0.2", 80, tcpListen, 4),        // another address
		sock("127.0.0.1", 81, tcpListen, 5),        // another port
		sock("127.0.0.1", 80, 1, 6),                // established, not a listener
		sock("::ffff:127.0.0.1", 80, tcpListen, 7), // v4-mapped
		sock("::1", 80, tcpListen, 8),
	}
	for _, tc := range []struct {
		dest   string
		stream bool
		want   []uint32
	}{
		{"127.0.0.1:80", true, []uint32{1, 2, 3, 7}},
		{"[::1]:80", true, []uint32{2, 3, 8}},
		{"[::ffff:127.0.0.1]:80", true, []uint32{1, 2, 3, 7}},
		{"127.0.0.1:80", false, []uint32{1, 2, 3, 6, 7}},
		{"127.0.0.9:80", true, []uint32{2, 3}},
	} {
		var got []uint32
		for _, s := range takers(socks, netip.MustParseAddrPort(tc.dest), tc.stream) {
			got = append(got, s.INode)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("takers(%s, stream %t) = %v, want %v", tc.dest, tc.stream, got, tc.want)
		}
	}
}

// The kernel's dump lists a datagram socket this process bound to an
// abstract name, with its name and inode, among the receivers.
func TestUnixReceiversDump(t *testing.T) {
	srv, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(srv)
	if err := unix.Bind(srv, &unix.SockaddrUnix{Name: "@nettrap-sockdiag-test"}); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(srv, &st); err != nil {
		t.Fatal(err)
	}
	got, err := UnixReceivers()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("unix_diag dump: %v (CI=true, so this is fatal)", err)
		}
		t.Skipf("no unix_diag here: %v", err)
	}
	for _, d := range got {
		if d.Ino == uint32(st.Ino) {
			if d.Name != "@nettrap-sockdiag-test" || !d.named {
				t.Errorf("socket %d listed as %+v, want the name @nettrap-sockdiag-test", d.Ino, d)
			}
			return
		}
	}
	t.Errorf("the bound datagram socket (inode %d) is not among %d receivers", st.Ino, len(got))
}

// inetMsg builds an inet_diag_msg.
func inetMsg(family, state uint8, src []byte, port uint16, uid, ino uint32) []byte {
	b := make([]byte, sizeofInetDiagMsg)
	b[0], b[1] = family, state
	binary.BigEndian.PutUint16(b[4:], port)
	copy(b[8:], src)
	binary.NativeEndian.PutUint32(b[64:], uid)
	binary.NativeEndian.PutUint32(b[68:], ino)
	return b
}

func TestParseInetDiag(t *testing.T) {
	for _, tc := range []struct {
		name string
		msg  []byte
		addr string
		port uint16
		uid  uint32
		ino  uint32
		bad  bool
	}{
		{"v4", inetMsg(unix.AF_INET, tcpListen, []byte{127, 0, 0, 1}, 8080, 1000, 77), "127.0.0.1", 8080, 1000, 77, false},
		{"v6", inetMsg(unix.AF_INET6, tcpListen, net.ParseIP("::1"), 443, 0, 78), "::1", 443, 0, 78, false},
		{"short", make([]byte, 40), "", 0, 0, 0, true},
		{"other family", inetMsg(unix.AF_UNIX, 0, nil, 0, 0, 0), "", 0, 0, 0, true},
	} {
		s, err := parseInetDiag(tc.msg)
		if tc.bad {
			if err == nil {
				t.Errorf("%s: no error", tc.name)
			}
			continue
		}
		if err != nil || !s.ID.Source.Equal(net.ParseIP(tc.addr)) || s.ID.SourcePort != tc.port || s.UID != tc.uid || s.INode != tc.ino {
			t.Errorf("%s: got %+v, %v", tc.name, s, err)
		}
	}
}

// The kernel lists a TCP listener of this process on 127.0.0.1 among
// the receivers of its address, with its inode.
func TestInetReceivers(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skip(err)
	}
	defer ln.Close()
	f, err := ln.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var st unix.Stat_t
	unix.Fstat(int(f.Fd()), &st)
	socks, err := InetReceivers(ln.Addr().(*net.TCPAddr).AddrPort(), unix.IPPROTO_TCP)
	if err != nil {
		t.Skipf("no inet_diag here: %v", err)
	}
	found := false
	for _, s := range socks {
		found = found || uint64(s.INode) == st.Ino
	}
	if !found {
		t.Errorf("listener inode %d not among %d receivers", st.Ino, len(socks))
	}
}
