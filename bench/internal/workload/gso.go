package main

import (
	"encoding/binary"
	"os"

	"golang.org/x/sys/unix"
)

// GSO shape of the "udpgso" op, after quic-go's send path: one sendmsg
// on an unconnected UDP socket carries gsoSegments packets of gsoSize
// bytes, split by the kernel (a UDP_SEGMENT control message), plus the
// IP_TOS control message quic-go adds for ECN.
const (
	gsoSize     = 1252
	gsoSegments = 4
)

// makeUDPGSO sends one GSO batch per op with sendmsg, naming the peer.
func makeUDPGSO() (op, func(), error) {
	fd, peer, cleanup, err := udpPair(false)
	if err != nil {
		return nil, nil, err
	}
	buf := make([]byte, gsoSize*gsoSegments)
	oob := gsoControl(gsoSize, 0x02) // ECT(0)
	return func() error {
		_, err := unix.SendmsgN(fd, buf, oob, peer, 0)
		return os.NewSyscallError("sendmsg", err)
	}, cleanup, nil
}

// gsoControl builds the UDP_SEGMENT and IP_TOS control messages.
func gsoControl(segment uint16, tos byte) []byte {
	seg := make([]byte, unix.CmsgSpace(2))
	putCmsg(seg, unix.SOL_UDP, unix.UDP_SEGMENT, 2)
	binary.NativeEndian.PutUint16(seg[unix.CmsgLen(0):], segment)
	ecn := make([]byte, unix.CmsgSpace(4))
	putCmsg(ecn, unix.IPPROTO_IP, unix.IP_TOS, 4)
	binary.NativeEndian.PutUint32(ecn[unix.CmsgLen(0):], uint32(tos))
	return append(seg, ecn...)
}

// putCmsg writes a cmsghdr (len, level, type: 64-bit layout) at b.
func putCmsg(b []byte, level, typ int32, dataLen int) {
	binary.NativeEndian.PutUint64(b[0:8], uint64(unix.CmsgLen(dataLen)))
	binary.NativeEndian.PutUint32(b[8:12], uint32(level))
	binary.NativeEndian.PutUint32(b[12:16], uint32(typ))
}
