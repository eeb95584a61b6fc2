package sockdiag

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// Socket diagnostics (NETLINK_SOCK_DIAG) for the peer checks of
// --sealed (supervisor/peer.go): which socket a unix datagram socket is connected
// to, the name a unix socket was bound with, and which sockets listen on
// (or are bound to) a loopback port. Asked from nettrap's own thread,
// so in the network namespace nettrap started in: the kernel answers
// about the namespace of the asking netlink socket.

// unixDiagShowName and unixDiagShowPeer are UDIAG_SHOW_NAME and
// UDIAG_SHOW_PEER of linux/unix_diag.h (not in x/sys/unix): each asks
// for the attribute of the same number (netlink.UNIX_DIAG_*).
const (
	unixDiagShowName = 1 << netlink.UNIX_DIAG_NAME
	unixDiagShowVFS  = 1 << netlink.UNIX_DIAG_VFS
	unixDiagShowPeer = 1 << netlink.UNIX_DIAG_PEER
	// unixDiagShowUID is UDIAG_SHOW_UID (5.3+), whose attribute is
	// unixDiagUID (UNIX_DIAG_UID).
	unixDiagShowUID = 0x40
	unixDiagUID     = 7
)

// sizeofUnixDiagReq and sizeofUnixDiagMsg are the sizes of struct
// unix_diag_req and struct unix_diag_msg.
const (
	sizeofUnixDiagReq = 24
	sizeofUnixDiagMsg = 16
)

// unixDiagReq is one unix_diag_req asking about the socket of inode ino
// (no dump: the kernel looks it up by inode).
type unixDiagReq struct {
	ino    uint32
	show   uint32
	states uint32 // for a dump; 0: every state
}

func (r *unixDiagReq) Len() int { return sizeofUnixDiagReq }

func (r *unixDiagReq) Serialize() []byte {
	b := make([]byte, sizeofUnixDiagReq)
	b[0] = unix.AF_UNIX
	ne := binary.NativeEndian
	states := r.states
	if states == 0 {
		states = ^uint32(0)
	}
	ne.PutUint32(b[4:], states)
	ne.PutUint32(b[8:], r.ino)
	ne.PutUint32(b[12:], r.show)
	// INET_DIAG_NOCOOKIE: the kernel does not check the cookie.
	ne.PutUint32(b[16:], ^uint32(0))
	ne.PutUint32(b[20:], ^uint32(0))
	return b
}

// UnixDiag is what the kernel said about one unix socket.
type UnixDiag struct {
	Ino, peer uint32 // peer 0: none (not connected)
	Name      string // "" unnamed; "@…" abstract
	named     bool
	// vfsIno and vfsDev name the socket file of a path name
	// (UNIX_DIAG_VFS; vfsDev as the kernel encodes a dev_t, as stat's
	// st_dev).
	vfsIno, vfsDev uint32
	vfs            bool
	UID            int // -1: not told
}

// UnixListeners lists the listening unix sockets (stream and seqpacket)
// of nettrap's network namespace, with their names and socket files.
func UnixListeners() (out []UnixDiag, err error) {
	return unixBound(1 << tcpListen)
}

// UnixReceivers lists the datagram sockets that can receive: not
// connected (TCP_CLOSE) or connected (TCP_ESTABLISHED; such a socket
// still receives from its peer).
func UnixReceivers() (out []UnixDiag, err error) {
	return unixBound(1<<tcpClose | 1<<tcpEstablished)
}

// tcpEstablished and tcpClose are TCP_ESTABLISHED and TCP_CLOSE, the
// kernel's TCP states, which x/sys/unix names for BPF only.
const (
	tcpEstablished = unix.BPF_TCP_ESTABLISHED
	tcpClose       = unix.BPF_TCP_CLOSE
)

// unixBound lists the unix sockets in states, with names and files.
func unixBound(states uint32) (out []UnixDiag, err error) {
	for try := 0; try < 3; try++ {
		if out, err = dumpUnix(states); !errors.Is(err, netlink.ErrDumpInterrupted) {
			break
		}
	}
	return out, err
}

// dumpUnix is one try of unixBound: a dump the kernel says
// was interrupted (the table changed meanwhile) may miss a socket.
func dumpUnix(states uint32) ([]UnixDiag, error) {
	out, err := dumpDiag(&unixDiagReq{show: unixDiagShowName | unixDiagShowVFS | unixDiagShowUID, states: states}, parseUnixDiag)
	if err != nil {
		return nil, fmt.Errorf("unix_diag dump: %w", err)
	}
	return out, nil
}

// kernelDev is st_dev (the encoding stat gives userspace) as the kernel
// keeps a dev_t, which unix_diag reports (MKDEV: major<<20 | minor).
func kernelDev(stDev uint64) uint32 {
	return unix.Major(stDev)<<20 | unix.Minor(stDev)
}

// ListenerOf finds among ls the listener bound to the socket file st
// (a path), or named name (abstract, "@…"); nil when none.
func ListenerOf(ls []UnixDiag, st *unix.Stat_t, name string) *UnixDiag {
	for i := range ls {
		l := &ls[i]
		switch {
		case st != nil && l.vfs && l.vfsIno == uint32(st.Ino) && l.vfsDev == kernelDev(st.Dev):
			return l
		case st == nil && l.named && l.Name == name:
			return l
		}
	}
	return nil
}

// errShortDiag: an answer shorter than its header says.
var errShortDiag = errors.New("unix_diag answer cut short")

// parseUnixDiag reads a unix_diag_msg and its attributes.
func parseUnixDiag(b []byte) (UnixDiag, error) {
	if len(b) < sizeofUnixDiagMsg || b[0] != unix.AF_UNIX {
		return UnixDiag{}, errShortDiag
	}
	ne := binary.NativeEndian
	d := UnixDiag{Ino: ne.Uint32(b[4:]), UID: -1}
	for rest := b[sizeofUnixDiagMsg:]; len(rest) >= 4; {
		n, typ := int(ne.Uint16(rest)), ne.Uint16(rest[2:])
		if n < 4 || n > len(rest) {
			return UnixDiag{}, errShortDiag
		}
		val := rest[4:n]
		switch typ {
		case netlink.UNIX_DIAG_PEER:
			if len(val) < 4 {
				return UnixDiag{}, errShortDiag
			}
			d.peer = ne.Uint32(val)
		case netlink.UNIX_DIAG_NAME:
			d.Name, d.named = UnixName(val), true
		case unixDiagUID:
			if len(val) < 4 {
				return UnixDiag{}, errShortDiag
			}
			d.UID = int(ne.Uint32(val))
		case netlink.UNIX_DIAG_VFS:
			if len(val) < 8 {
				return UnixDiag{}, errShortDiag
			}
			d.vfsIno, d.vfsDev, d.vfs = ne.Uint32(val), ne.Uint32(val[4:]), true
		}
		rest = rest[min((n+3)&^3, len(rest)):]
	}
	return d, nil
}

// UnixName words a bound name as ss(8) does: an abstract one with @.
func UnixName(val []byte) string {
	if len(val) > 0 && val[0] == 0 {
		return "@" + string(val[1:])
	}
	for i, c := range val {
		if c == 0 {
			return string(val[:i])
		}
	}
	return string(val)
}

// InetReceivers lists the inodes of the sockets, TCP (stream) or UDP,
// that would take a connection or a datagram to dest: every socket bound
// to its port on its address, on the unspecified address of either
// family (a dual-stack [::] socket takes IPv4 too), or on the v4-mapped
// form. For TCP only listening sockets count. All of them, not the first:
// with SO_REUSEPORT a listener of the tree can sit beside an outside one.
func InetReceivers(dest netip.AddrPort, proto int) ([]*netlink.Socket, error) {
	stream := proto == unix.IPPROTO_TCP
	var all []*netlink.Socket
	for _, fam := range []uint8{unix.AF_INET, unix.AF_INET6} {
		var socks []*netlink.Socket
		var err error
		for try := 0; try < 3; try++ {
			if socks, err = dumpInet(fam, proto); !errors.Is(err, netlink.ErrDumpInterrupted) {
				break
			}
		}
		if err != nil {
			return nil, fmt.Errorf("inet_diag: %w", err)
		}
		all = append(all, socks...)
	}
	return takers(all, dest, stream), nil
}

// inetDiagReq is an inet_diag_req_v2 that dumps the sockets of one
// family and protocol in some states, asking no extension: only
// listeners for TCP, which a busy machine has few of (the library's
// dumps ask every socket, with TCP_INFO).
type inetDiagReq struct {
	family, protocol uint8
	states           uint32
}

// sizeofInetDiagReq is sizeof(struct inet_diag_req_v2).
const sizeofInetDiagReq = 56

func (r *inetDiagReq) Len() int { return sizeofInetDiagReq }

func (r *inetDiagReq) Serialize() []byte {
	b := make([]byte, sizeofInetDiagReq)
	b[0], b[1] = r.family, r.protocol
	binary.NativeEndian.PutUint32(b[4:], r.states)
	// INET_DIAG_NOCOOKIE, at the end of the socket id.
	binary.NativeEndian.PutUint32(b[48:], ^uint32(0))
	binary.NativeEndian.PutUint32(b[52:], ^uint32(0))
	return b
}

// dumpInet lists the TCP listeners, or all UDP (UDP-Lite) sockets, of
// one family.
func dumpInet(family uint8, proto int) ([]*netlink.Socket, error) {
	r := &inetDiagReq{family: family, protocol: uint8(proto), states: ^uint32(0)}
	if proto == unix.IPPROTO_TCP {
		r.states = 1 << tcpListen
	}
	return dumpDiag(r, parseInetDiag)
}

// dumpDiag sends one sock_diag dump request and parses every answer;
// the first answer that does not parse ends the dump with its error.
func dumpDiag[T any](req nl.NetlinkRequestData, parse func([]byte) (T, error)) ([]T, error) {
	r := nl.NewNetlinkRequest(unix.SOCK_DIAG_BY_FAMILY, unix.NLM_F_DUMP)
	r.AddData(req)
	var out []T
	var perr error
	err := r.ExecuteIter(unix.NETLINK_SOCK_DIAG, unix.SOCK_DIAG_BY_FAMILY, func(msg []byte) bool {
		v, err := parse(msg)
		if err != nil {
			perr = err
			return false
		}
		out = append(out, v)
		return true
	})
	if err == nil {
		err = perr
	}
	return out, err
}

// sizeofInetDiagMsg is sizeof(struct inet_diag_msg).
const sizeofInetDiagMsg = 72

// parseInetDiag reads the inet_diag_msg fields the checks use: family,
// state, the local address and port, the owner and the inode.
func parseInetDiag(b []byte) (*netlink.Socket, error) {
	if len(b) < sizeofInetDiagMsg {
		return nil, errors.New("inet_diag answer cut short")
	}
	s := &netlink.Socket{Family: b[0], State: b[1]}
	s.ID.SourcePort = binary.BigEndian.Uint16(b[4:])
	s.ID.DestinationPort = binary.BigEndian.Uint16(b[6:])
	switch s.Family {
	case unix.AF_INET:
		s.ID.Source = net.IP(append([]byte(nil), b[8:12]...))
	case unix.AF_INET6:
		s.ID.Source = net.IP(append([]byte(nil), b[8:24]...))
	default:
		return nil, fmt.Errorf("inet_diag answer of family %d", s.Family)
	}
	s.UID = binary.NativeEndian.Uint32(b[64:])
	s.INode = binary.NativeEndian.Uint32(b[68:])
	return s, nil
}

// tcpListen is TCP_LISTEN.
const tcpListen = 10

// takers picks from socks those that take what goes to dest (see
// inetReceivers).
func takers(socks []*netlink.Socket, dest netip.AddrPort, stream bool) []*netlink.Socket {
	want := dest.Addr().Unmap()
	var out []*netlink.Socket
	for _, s := range socks {
		if s.ID.SourcePort != dest.Port() || (stream && s.State != tcpListen) {
			continue
		}
		local, ok := netip.AddrFromSlice(s.ID.Source)
		if !ok {
			continue
		}
		local = local.Unmap()
		if local == want || local.IsUnspecified() {
			out = append(out, s)
		}
	}
	return out
}
