package fakehost

import (
	"errors"
	"fmt"
	"net"
	"net/netip"

	"golang.org/x/net/ipv4"
)

func (h *Host) serveUDP(addr netip.AddrPort) error {
	c, err := listenUDP(addr)
	if err != nil {
		return fmt.Errorf("listen udp %s: %w", addr, err)
	}
	if !h.track(c) {
		return errors.New("host closed")
	}
	var pc *ipv4.PacketConn
	if wildcard(addr) {
		// Bound to 0.0.0.0: ask the kernel where each datagram was aimed.
		pc = ipv4.NewPacketConn(c)
		if err := pc.SetControlMessage(ipv4.FlagDst, true); err != nil {
			return fmt.Errorf("udp %s: IP_PKTINFO: %w", addr, err)
		}
	}
	h.wg.Go(func() { h.readUDP(c, pc, addr) })
	return nil
}

// wildcard reports whether addr can only be served by a 0.0.0.0 socket.
func wildcard(addr netip.AddrPort) bool {
	a := addr.Addr()
	if !a.Is4() {
		return false
	}
	return a.IsMulticast() || a == netip.IPv4Unspecified() || a == netip.AddrFrom4([4]byte{255, 255, 255, 255})
}

func listenUDP(addr netip.AddrPort) (*net.UDPConn, error) {
	a := addr.Addr()
	switch {
	case a.IsMulticast():
		lo, err := net.InterfaceByName("lo")
		if err != nil {
			return nil, err
		}
		network := "udp6"
		if a.Is4() {
			network = "udp4"
		}
		return net.ListenMulticastUDP(network, lo, net.UDPAddrFromAddrPort(addr))
	case a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4zero, Port: int(addr.Port())})
	}
	return net.ListenUDP("udp", net.UDPAddrFromAddrPort(addr))
}

func (h *Host) readUDP(c *net.UDPConn, pc *ipv4.PacketConn, addr netip.AddrPort) {
	buf := make([]byte, 65536)
	for {
		n, local, from, err := readDatagram(c, pc, buf, addr)
		if err != nil {
			return
		}
		msg := buf[:n]
		r := Record{Proto: "udp", Local: local, Remote: unmap(from), Data: clip(msg)}
		var resp []byte
		if addr.Port() == 53 {
			var ok bool
			if resp, r.Query, ok = answerDNS(msg); !ok {
				resp = nil
			}
		}
		h.add(r)
		if resp != nil {
			_, _ = c.WriteToUDPAddrPort(resp, from)
		}
	}
}

func readDatagram(c *net.UDPConn, pc *ipv4.PacketConn, buf []byte, addr netip.AddrPort) (int, netip.AddrPort, netip.AddrPort, error) {
	if pc == nil {
		n, from, err := c.ReadFromUDPAddrPort(buf)
		return n, addr, from, err
	}
	n, cm, src, err := pc.ReadFrom(buf)
	if err != nil {
		return 0, addr, netip.AddrPort{}, err
	}
	local := addr
	if cm != nil {
		if d, ok := netip.AddrFromSlice(cm.Dst); ok {
			local = netip.AddrPortFrom(d.Unmap(), addr.Port())
		}
	}
	return n, local, addrPort(src, netip.AddrPort{}), nil
}
