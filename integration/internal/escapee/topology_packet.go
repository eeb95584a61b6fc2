package main

import (
	"bytes"
	"errors"
	"net"
	"time"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// etherTopology is the EtherType of the test frames (local experimental).
const etherTopology = 0x88b5

func htons(v uint16) uint16 { return v<<8 | v>>8 }

func netnsHandle(fd int) netns.NsHandle { return netns.NsHandle(fd) }

// packetListenerIn makes, in namespace a, a packet socket bound to a0
// that reads the test frames; the calling thread goes back to where it
// was.
func packetListenerIn(a int) (int, error) {
	back, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, sysErr("open b", err)
	}
	defer unix.Close(back)
	if err := unix.Setns(a, unix.CLONE_NEWNET); err != nil {
		return -1, sysErr("setns a", err)
	}
	fd, err := packetSocket("a0")
	if serr := unix.Setns(back, unix.CLONE_NEWNET); serr != nil {
		return -1, sysErr("setns b", serr)
	}
	return fd, err
}

// packetSocket is a packet socket bound to the test frames on iface.
func packetSocket(iface string) (int, error) {
	ifi, err := net.InterfaceByName(iface)
	if err != nil {
		return -1, err
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(htons(etherTopology)))
	if err != nil {
		return -1, sysErr("socket(AF_PACKET)", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(etherTopology), Ifindex: ifi.Index}); err != nil {
		unix.Close(fd)
		return -1, sysErr("bind(AF_PACKET)", err)
	}
	return fd, nil
}

// talkPacket sends a frame on a packet socket on b0 and reads it on
// peer, bound to a0.
func talkPacket(peer int) error {
	fd, err := packetSocket("b0")
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	a0, err := peerMAC(peer)
	if err != nil {
		return err
	}
	payload := []byte("frame to a")
	to := &unix.SockaddrLinklayer{Protocol: htons(etherTopology), Halen: 6}
	copy(to.Addr[:], a0)
	ifi, err := net.InterfaceByName("b0")
	if err != nil {
		return err
	}
	to.Ifindex = ifi.Index
	frame := append(append(append(append([]byte{}, a0...), ifi.HardwareAddr...), byte(etherTopology>>8), byte(etherTopology&0xff)), payload...)
	if err := unix.Sendto(fd, frame, 0, to); err != nil {
		return sysErr("sendto(AF_PACKET)", err)
	}
	tv := unix.NsecToTimeval(int64(5 * time.Second))
	unix.SetsockoptTimeval(peer, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	b := make([]byte, 1500)
	for {
		n, _, err := unix.Recvfrom(peer, b, 0)
		if err != nil {
			return sysErr("recvfrom(AF_PACKET) on a0", err)
		}
		if bytes.Contains(b[:n], payload) {
			return nil
		}
	}
}

// peerMAC is the address of the interface peer is bound to.
func peerMAC(peer int) (net.HardwareAddr, error) {
	sa, err := unix.Getsockname(peer)
	if err != nil {
		return nil, sysErr("getsockname(AF_PACKET)", err)
	}
	ll, ok := sa.(*unix.SockaddrLinklayer)
	if !ok || ll.Halen != 6 {
		return nil, errors.New("a0's packet socket has no ethernet address")
	}
	return net.HardwareAddr(ll.Addr[:6]), nil
}
