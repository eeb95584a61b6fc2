package lab

import (
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// capture reads every frame that arrives at the outside's end of the veth.
type capture struct {
	f *os.File
	*log
	done chan struct{}
}

func htons(v uint16) uint16 { return v>>8 | v<<8 }

// startCapture opens an AF_PACKET socket in the outside namespace, bound
// to the veth, for incoming frames only.
func (l *Lab) startCapture() error {
	var fd int
	err := l.Outside(func() error {
		ifi, err := net.InterfaceByName(OutsideLink)
		if err != nil {
			return err
		}
		fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, int(htons(unix.ETH_P_ALL)))
		if err != nil {
			return os.NewSyscallError("socket(AF_PACKET)", err)
		}
		if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1); err != nil {
			unix.Close(fd)
			return os.NewSyscallError("setsockopt(PACKET_IGNORE_OUTGOING)", err)
		}
		sa := &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifi.Index}
		if err := unix.Bind(fd, sa); err != nil {
			unix.Close(fd)
			return os.NewSyscallError("bind(AF_PACKET)", err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	c := &capture{f: os.NewFile(uintptr(fd), "capture"), log: newLog(), done: make(chan struct{})}
	go c.read()
	l.capture = c
	return nil
}

func (c *capture) read() {
	defer close(c.done)
	buf := make([]byte, 65536)
	for {
		n, err := c.f.Read(buf)
		if err != nil {
			return
		}
		c.add(Record{Kind: "frame", Data: append([]byte(nil), buf[:n]...)})
	}
}

func (c *capture) close() {
	c.f.Close()
	<-c.done
}

// Frames returns the frames captured so far.
func (l *Lab) Frames() []Record { return l.capture.Records() }

// WaitFrame waits for a captured frame that satisfies pred.
func (l *Lab) WaitFrame(pred func(Record) bool, timeout time.Duration) (Record, bool) {
	return l.capture.WaitFor(pred, timeout)
}

// DumpFrames describes every captured frame, for failure messages.
func (l *Lab) DumpFrames() string { return l.capture.Dump() }

// Packet is the IP layer of a frame.
type Packet struct {
	Version int
	Src     net.IP
	Dst     net.IP
	Proto   int    // the upper-layer protocol, after IPv6 extension headers
	Payload []byte // the upper-layer data
}

// ParseFrame decodes an Ethernet frame carrying IPv4 or IPv6; ok is false
// for anything else (ARP, neighbour discovery still counts: it is ICMPv6).
func ParseFrame(b []byte) (Packet, bool) {
	if len(b) < 14 {
		return Packet{}, false
	}
	p := b[14:]
	switch binary.BigEndian.Uint16(b[12:]) {
	case unix.ETH_P_IP:
		if len(p) < 20 || p[0]>>4 != 4 {
			return Packet{}, false
		}
		ihl := int(p[0]&0xf) * 4
		if ihl < 20 || len(p) < ihl {
			return Packet{}, false
		}
		return Packet{Version: 4, Src: net.IP(p[12:16]), Dst: net.IP(p[16:20]), Proto: int(p[9]), Payload: p[ihl:]}, true
	case unix.ETH_P_IPV6:
		if len(p) < 40 || p[0]>>4 != 6 {
			return Packet{}, false
		}
		pk := Packet{Version: 6, Src: net.IP(p[8:24]), Dst: net.IP(p[24:40])}
		next, rest := int(p[6]), p[40:]
		// Hop-by-hop, routing and destination options: skip to the data.
		for (next == 0 || next == 43 || next == 60) && len(rest) >= 8 {
			n := (int(rest[1]) + 1) * 8
			if n > len(rest) {
				return Packet{}, false
			}
			next, rest = int(rest[0]), rest[n:]
		}
		pk.Proto, pk.Payload = next, rest
		return pk, true
	}
	return Packet{}, false
}

// IsGroupReport reports whether r is an IGMP or MLD report (of any
// version) that names group.
func IsGroupReport(r Record, group net.IP) bool {
	p, ok := ParseFrame(r.Data)
	if !ok || len(p.Payload) < 1 {
		return false
	}
	g := group.To4()
	if g == nil {
		g = group.To16()
	}
	switch {
	case p.Version == 4 && p.Proto == unix.IPPROTO_IGMP:
		switch p.Payload[0] {
		case 0x12, 0x16, 0x17, 0x22: // v1, v2 reports, v2 leave, v3 report
		default:
			return false
		}
	case p.Version == 6 && p.Proto == unix.IPPROTO_ICMPV6:
		switch p.Payload[0] {
		case 131, 132, 143: // MLDv1 report, done; MLDv2 report
		default:
			return false
		}
	default:
		return false
	}
	return containsIP(p.Payload, g)
}

func containsIP(b []byte, ip []byte) bool {
	for i := 0; i+len(ip) <= len(b); i++ {
		if string(b[i:i+len(ip)]) == string(ip) {
			return true
		}
	}
	return false
}

func describeFrame(b []byte) string {
	p, ok := ParseFrame(b)
	if !ok {
		if len(b) >= 14 {
			return fmt.Sprintf("ethertype %#04x, %d bytes", binary.BigEndian.Uint16(b[12:]), len(b))
		}
		return fmt.Sprintf("%d bytes", len(b))
	}
	return fmt.Sprintf("IPv%d %s -> %s proto %d, %d bytes of payload %q", p.Version, p.Src, p.Dst, p.Proto, len(p.Payload), clip(p.Payload))
}

func clip(b []byte) []byte {
	if len(b) > 64 {
		return b[:64]
	}
	return b
}
