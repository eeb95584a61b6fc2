package main

import (
	"encoding/binary"
	"net"
	"net/netip"
	"strconv"

	"golang.org/x/sys/unix"
)

const (
	xdpFrames    = 16
	xdpFrameSize = 2048
	xdpRingSize  = 16
)

// xdpSend puts one UDP frame for DST:PORT on interface IFINDEX with an
// AF_XDP socket in copy mode: a TX ring, no destination address at all,
// and a kick with sendto(fd, NULL, 0, …) that no address check can see.
func xdpSend(args []string) error {
	ifindex, _ := strconv.Atoi(args[0])
	srcMAC, err := net.ParseMAC(args[1])
	if err != nil {
		return err
	}
	dstMAC, err := net.ParseMAC(args[2])
	if err != nil {
		return err
	}
	src, err := netip.ParseAddr(args[3])
	if err != nil {
		return err
	}
	dst, err := netip.ParseAddrPort(args[4])
	if err != nil {
		return err
	}
	fd, err := unix.Socket(unix.AF_XDP, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return sysErr("socket(AF_XDP)", err)
	}
	defer unix.Close(fd)
	umem, err := unix.Mmap(-1, 0, xdpFrames*xdpFrameSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
	if err != nil {
		return sysErr("mmap(umem)", err)
	}
	defer unix.Munmap(umem)
	// struct xdp_umem_reg, in its first (24-byte) form.
	reg := make([]byte, 24)
	binary.NativeEndian.PutUint64(reg[0:], sliceAddr(umem))
	binary.NativeEndian.PutUint64(reg[8:], uint64(len(umem)))
	binary.NativeEndian.PutUint32(reg[16:], xdpFrameSize)
	if err := unix.SetsockoptString(fd, unix.SOL_XDP, unix.XDP_UMEM_REG, string(reg)); err != nil {
		return sysErr("setsockopt(XDP_UMEM_REG)", err)
	}
	for _, opt := range []int{unix.XDP_UMEM_FILL_RING, unix.XDP_UMEM_COMPLETION_RING, unix.XDP_TX_RING} {
		if err := unix.SetsockoptInt(fd, unix.SOL_XDP, opt, xdpRingSize); err != nil {
			return sysErr("setsockopt(XDP ring)", err)
		}
	}
	off, err := mmapOffsets(fd)
	if err != nil {
		return sysErr("getsockopt(XDP_MMAP_OFFSETS)", err)
	}
	tx, err := unix.Mmap(fd, unix.XDP_PGOFF_TX_RING, int(off.Tx.Desc)+xdpRingSize*16,
		unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return sysErr("mmap(tx ring)", err)
	}
	defer unix.Munmap(tx)
	if err := unix.Bind(fd, &unix.SockaddrXDP{Flags: unix.XDP_COPY, Ifindex: uint32(ifindex)}); err != nil {
		return sysErr("bind(AF_XDP)", err)
	}
	n := copy(umem, udpFrame(srcMAC, dstMAC, src, dst, []byte(args[5])))
	// One descriptor (struct xdp_desc: addr, len, options) at slot 0.
	binary.NativeEndian.PutUint64(tx[off.Tx.Desc:], 0)
	binary.NativeEndian.PutUint32(tx[off.Tx.Desc+8:], uint32(n))
	binary.NativeEndian.PutUint32(tx[off.Tx.Desc+12:], 0)
	publish(tx, off.Tx.Producer, 1)
	return sysErr("sendto", unix.Sendto(fd, nil, unix.MSG_DONTWAIT, nil))
}

// udpFrame builds Ethernet + IPv4 + UDP around payload.
func udpFrame(srcMAC, dstMAC net.HardwareAddr, src netip.Addr, dst netip.AddrPort, payload []byte) []byte {
	b := make([]byte, 14+20+8+len(payload))
	copy(b[0:], dstMAC)
	copy(b[6:], srcMAC)
	binary.BigEndian.PutUint16(b[12:], unix.ETH_P_IP)
	ip := b[14:34]
	ip[0], ip[8], ip[9] = 0x45, 64, unix.IPPROTO_UDP
	binary.BigEndian.PutUint16(ip[2:], uint16(20+8+len(payload)))
	s, d := src.As4(), dst.Addr().As4()
	copy(ip[12:], s[:])
	copy(ip[16:], d[:])
	binary.BigEndian.PutUint16(ip[10:], ipChecksum(ip))
	udp := b[34:42]
	binary.BigEndian.PutUint16(udp[0:], 40000)
	binary.BigEndian.PutUint16(udp[2:], dst.Port())
	binary.BigEndian.PutUint16(udp[4:], uint16(8+len(payload)))
	copy(b[42:], payload)
	return b
}

func ipChecksum(h []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(h); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(h[i:]))
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}
