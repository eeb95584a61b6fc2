package main

import (
	"bufio"
	"fmt"
	"net"
	"runtime"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// ownTopology: two network namespaces of its own, a and b, joined by a
// veth (b0 in b, a0 in a), with a documentation and a private address on
// each end; from b, a TCP connection to 192.0.2.1:80 and a UDP datagram to
// 10.77.0.1:5353 reach servers in a, and a frame sent on a packet socket
// on b0 is read by one on a0. What a CNI plugin's or a netlink library's
// tests do. Fails at the first step that fails.
func ownTopology() error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies in b
		errc <- buildAndTalk()
	}()
	return <-errc
}

func buildAndTalk() error {
	if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
		return sysErr("unshare a", err)
	}
	a, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return sysErr("open a", err)
	}
	defer unix.Close(a)
	// Servers in a: sockets stay in the namespace they were made in.
	ln, err := net.Listen("tcp4", "0.0.0.0:80")
	if err != nil {
		return err
	}
	defer ln.Close()
	udp, err := net.ListenPacket("udp4", "0.0.0.0:5353")
	if err != nil {
		return err
	}
	defer udp.Close()
	if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
		return sysErr("unshare b", err)
	}
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "b0"}, PeerName: "a0", PeerNamespace: netlink.NsFd(a)}
	if err := netlink.LinkAdd(veth); err != nil {
		return fmt.Errorf("veth b0/a0: %w", err)
	}
	if err := linkUp("lo"); err != nil {
		return err
	}
	for _, addr := range []string{"192.0.2.2/24", "10.77.0.2/24"} {
		if err := addrUp("b0", addr); err != nil {
			return err
		}
	}
	ha, err := netlink.NewHandleAt(netnsHandle(a))
	if err != nil {
		return fmt.Errorf("netlink in a: %w", err)
	}
	defer ha.Close()
	if err := configureA(ha); err != nil {
		return err
	}
	peer, err := packetListenerIn(a)
	if err != nil {
		return err
	}
	defer unix.Close(peer)
	if err := talkTCP(ln); err != nil {
		return err
	}
	if err := talkUDP(udp); err != nil {
		return err
	}
	return talkPacket(peer)
}

// configureA puts the addresses on a0 and sets a's links up, through a
// netlink socket made in a.
func configureA(h *netlink.Handle) error {
	for _, name := range []string{"lo", "a0"} {
		l, err := h.LinkByName(name)
		if err != nil {
			return fmt.Errorf("%s in a: %w", name, err)
		}
		if name == "a0" {
			for _, s := range []string{"192.0.2.1/24", "10.77.0.1/24"} {
				addr, _ := netlink.ParseAddr(s)
				if err := h.AddrAdd(l, addr); err != nil {
					return fmt.Errorf("address %s on a0: %w", s, err)
				}
			}
		}
		if err := h.LinkSetUp(l); err != nil {
			return fmt.Errorf("%s up in a: %w", name, err)
		}
	}
	return nil
}

// talkTCP connects from b to 192.0.2.1:80 and has a line echoed back.
func talkTCP(ln net.Listener) error {
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		line, _ := bufio.NewReader(c).ReadString('\n')
		c.Write([]byte(line))
	}()
	c, err := net.DialTimeout("tcp4", "192.0.2.1:80", 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("hello a\n")); err != nil {
		return err
	}
	got, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || got != "hello a\n" {
		return fmt.Errorf("tcp echo from 192.0.2.1:80: %q, %v", got, err)
	}
	return nil
}

// talkUDP sends a datagram from b to 10.77.0.1:5353 and reads it in a.
func talkUDP(pc net.PacketConn) error {
	c, err := net.Dial("udp4", "10.77.0.1:5353")
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.Write([]byte("datagram to a")); err != nil {
		return err
	}
	pc.SetReadDeadline(time.Now().Add(5 * time.Second))
	b := make([]byte, 64)
	n, _, err := pc.ReadFrom(b)
	if err != nil || string(b[:n]) != "datagram to a" {
		return fmt.Errorf("udp at 10.77.0.1:5353: %q, %v", b[:n], err)
	}
	return nil
}
