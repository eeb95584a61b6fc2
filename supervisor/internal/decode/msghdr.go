package decode

import "encoding/binary"

// msghdr is the part of struct msghdr (64-bit) that decides where a
// message goes: msg_name and msg_namelen, and the control messages, which
// can carry a source route.
type msghdr struct {
	name       uint64
	namelen    int32
	iov        uint64 // kept for an emulated send's payload
	iovlen     uint64
	control    uint64
	controllen uint64
}

const (
	SizeofMsghdr          = 56 // struct msghdr on 64-bit ABIs
	SizeofMmsghdr         = 64 // struct mmsghdr: msghdr + unsigned msg_len + padding
	sizeofSockaddrStorage = 128
	SizeofSockaddrNetlink = 12   // struct sockaddr_nl
	UioMaxIOV             = 1024 // UIO_MAXIOV: the kernel clamps sendmmsg's vlen to it
)

func parseMsghdr(b []byte) msghdr {
	return msghdr{
		name:       binary.NativeEndian.Uint64(b[0:8]),
		namelen:    int32(binary.NativeEndian.Uint32(b[8:12])),
		iov:        binary.NativeEndian.Uint64(b[16:24]),
		iovlen:     binary.NativeEndian.Uint64(b[24:32]),
		control:    binary.NativeEndian.Uint64(b[32:40]),
		controllen: binary.NativeEndian.Uint64(b[40:48]),
	}
}
