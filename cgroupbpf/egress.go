package cgroupbpf

import (
	"os"

	"golang.org/x/sys/unix"
)

// Offsets in the network header, which the backstop's (a cgroup_skb
// program's) bpf_skb_load_bytes counts from.
const (
	ip4VersionIHL = 0x45 // version 4, a 20-byte header: no options
	ip4Daddr      = 16
	ip6NextHdr    = 6
	ip6Daddr      = 24
	egressHdrLen  = 40 // an IPv6 header; an IPv4 one fits
)

// NetnsCookie is the cookie of the calling thread's network namespace
// (SO_NETNS_COOKIE, 5.14), for NewBackstop.
func NetnsCookie() (uint64, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, os.NewSyscallError("socket", err)
	}
	defer unix.Close(fd)
	c, err := unix.GetsockoptUint64(fd, unix.SOL_SOCKET, unix.SO_NETNS_COOKIE)
	if err != nil {
		return 0, os.NewSyscallError("getsockopt(SO_NETNS_COOKIE)", err)
	}
	return c, nil
}
