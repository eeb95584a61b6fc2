package main

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

func sockaddr(ap netip.AddrPort) (unix.Sockaddr, int) {
	if ap.Addr().Is4() {
		return &unix.SockaddrInet4{Addr: ap.Addr().As4(), Port: int(ap.Port())}, unix.AF_INET
	}
	return &unix.SockaddrInet6{Addr: ap.Addr().As16(), Port: int(ap.Port())}, unix.AF_INET6
}

// options parses OPT=V arguments.
func options(args []string) (map[string]string, error) {
	m := map[string]string{}
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		if !ok {
			return nil, fmt.Errorf("bad option %q (want OPT=VALUE)", a)
		}
		m[k] = v
	}
	return m, nil
}

func htonl(v uint32) uint32 {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], v)
	return binary.NativeEndian.Uint32(b[:])
}

// pin applies the socket options among opts to fd.
func pin(fd, family int, opts map[string]string) error {
	if v, ok := opts["unicast-if"]; ok {
		idx, _ := strconv.Atoi(v)
		level, name := unix.IPPROTO_IP, unix.IP_UNICAST_IF
		if family == unix.AF_INET6 {
			level, name = unix.IPPROTO_IPV6, unix.IPV6_UNICAST_IF
		}
		if err := unix.SetsockoptInt(fd, level, name, int(htonl(uint32(idx)))); err != nil {
			return sysErr("setsockopt(UNICAST_IF)", err)
		}
	}
	if v, ok := opts["sticky-pktinfo"]; ok {
		idx, _ := strconv.Atoi(v)
		if err := unix.SetsockoptString(fd, unix.IPPROTO_IPV6, unix.IPV6_PKTINFO, string(in6Pktinfo(idx))); err != nil {
			return sysErr("setsockopt(IPV6_PKTINFO)", err)
		}
	}
	if v, ok := opts["bindtodevice"]; ok {
		if err := unix.BindToDevice(fd, v); err != nil {
			return sysErr("setsockopt(SO_BINDTODEVICE)", err)
		}
	}
	if v, ok := opts["bindtoifindex"]; ok {
		idx, _ := strconv.Atoi(v)
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_BINDTOIFINDEX, idx); err != nil {
			return sysErr("setsockopt(SO_BINDTOIFINDEX)", err)
		}
	}
	return nil
}

func inPktinfo(idx int) []byte {
	b := make([]byte, 12)
	binary.NativeEndian.PutUint32(b, uint32(idx))
	return b
}

func in6Pktinfo(idx int) []byte {
	b := make([]byte, 20)
	binary.NativeEndian.PutUint32(b[16:], uint32(idx))
	return b
}

// pktinfo is the control message pinning a send to interface idx.
func pktinfo(family, idx int) []byte {
	if family == unix.AF_INET6 {
		return cmsg(unix.IPPROTO_IPV6, unix.IPV6_PKTINFO, in6Pktinfo(idx))
	}
	return cmsg(unix.IPPROTO_IP, unix.IP_PKTINFO, inPktinfo(idx))
}

func cmsg(level, typ int32, data []byte) []byte {
	b := make([]byte, unix.CmsgSpace(len(data)))
	binary.NativeEndian.PutUint64(b[0:], uint64(unix.CmsgLen(len(data))))
	binary.NativeEndian.PutUint32(b[8:], uint32(level))
	binary.NativeEndian.PutUint32(b[12:], uint32(typ))
	copy(b[unix.CmsgLen(0):], data)
	return b
}

// pinnedSocket opens a socket of type typ for dst and pins it as the
// options in rest say; the caller closes fd.
func pinnedSocket(dst string, typ int, rest []string) (fd int, sa unix.Sockaddr, fam int, opts map[string]string, err error) {
	ap, err := netip.ParseAddrPort(dst)
	if err != nil {
		return -1, nil, 0, nil, err
	}
	if opts, err = options(rest); err != nil {
		return -1, nil, 0, nil, err
	}
	sa, fam = sockaddr(ap)
	if fd, err = unix.Socket(fam, typ|unix.SOCK_CLOEXEC, 0); err != nil {
		return -1, nil, 0, nil, sysErr("socket", err)
	}
	if err := pin(fd, fam, opts); err != nil {
		unix.Close(fd)
		return -1, nil, 0, nil, err
	}
	return fd, sa, fam, opts, nil
}

func sendUDP(dst, marker string, rest []string) error {
	fd, sa, fam, opts, err := pinnedSocket(dst, unix.SOCK_DGRAM, rest)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var oob []byte
	if v, ok := opts["pktinfo"]; ok {
		idx, _ := strconv.Atoi(v)
		oob = pktinfo(fam, idx)
	}
	if v, ok := opts["lsrr"]; ok {
		hop, err := netip.ParseAddr(v)
		if err != nil || !hop.Is4() {
			return fmt.Errorf("lsrr=%s: want an IPv4 hop", v)
		}
		a := hop.As4()
		// type 131 (LSRR), length 7, pointer 4, the hop, NOP padding.
		oob = append(oob, cmsg(unix.IPPROTO_IP, unix.IP_RETOPTS, []byte{131, 7, 4, a[0], a[1], a[2], a[3], 1})...)
	}
	return sysErr("sendmsg", unix.Sendmsg(fd, []byte(marker), oob, sa, 0))
}

// sendTCP starts a connect to DST: the SYN leaves before connect returns
// EINPROGRESS, and that is the leak; nobody need answer it.
func sendTCP(dst string, rest []string) error {
	fd, sa, _, _, err := pinnedSocket(dst, unix.SOCK_STREAM|unix.SOCK_NONBLOCK, rest)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Connect(fd, sa); err != nil && err != unix.EINPROGRESS {
		return sysErr("connect", err)
	}
	return nil
}

// udpAfter opens an unconnected UDP socket as fd 3 (not close-on-exec),
// runs argv (a 32-bit program setting an option on it, say) and then
// sends marker to dst from the socket: the option set through another ABI,
// the send through the native one.
func udpAfter(dst, marker string, argv []string) error {
	ap, err := netip.ParseAddrPort(dst)
	if err != nil {
		return err
	}
	sa, fam := sockaddr(ap)
	fd, err := unix.Socket(fam, unix.SOCK_DGRAM, 0)
	if err != nil {
		return sysErr("socket", err)
	}
	if fd != 3 {
		if err := unix.Dup3(fd, 3, 0); err != nil {
			return sysErr("dup3", err)
		}
		unix.Close(fd)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.ExtraFiles = []*os.File{os.NewFile(3, "udp")}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w", argv[0], err)
	}
	return sysErr("sendto", unix.Sendto(3, []byte(marker), 0, sa))
}
