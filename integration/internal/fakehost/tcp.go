package fakehost

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"time"
)

// readTimeout bounds how long a connection's first bytes are awaited.
const readTimeout = 10 * time.Second

func (h *Host) serveTCP(addr netip.AddrPort) error {
	ln, err := net.Listen("tcp", addr.String())
	if err != nil {
		return fmt.Errorf("listen tcp %s: %w", addr, err)
	}
	if !h.track(ln) {
		return errors.New("host closed")
	}
	h.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if !h.track(c) {
				return
			}
			// Recorded here, in accept order, not in the connection's
			// goroutine: a probe's FIFO argument (see Host.Arrived) needs
			// every connection accepted before the probe's to be recorded
			// before it.
			i := h.add(Record{Proto: "tcp", Local: addrPort(c.LocalAddr(), addr), Remote: addrPort(c.RemoteAddr(), netip.AddrPort{})})
			h.wg.Go(func() { h.handleConn(c, addr, i) })
		}
	})
	return nil
}

func (h *Host) handleConn(c net.Conn, listen netip.AddrPort, i int) {
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(readTimeout))
	if listen.Port() == 53 {
		h.serveDNSConn(c, i)
		return
	}
	h.recordStream(c, i)
}

func (h *Host) recordStream(c net.Conn, i int) {
	buf := make([]byte, maxData)
	for n := 0; n < maxData; {
		m, err := c.Read(buf[n:])
		if m > 0 {
			chunk := buf[n : n+m]
			h.update(i, func(r *Record) { r.Data = append(r.Data, chunk...) })
		}
		n += m
		if err != nil {
			return
		}
	}
}

// serveDNSConn answers one length-prefixed query per message, as DNS over
// TCP does; the first query fills record i, later ones add records.
func (h *Host) serveDNSConn(c net.Conn, i int) {
	for first := true; ; first = false {
		var l [2]byte
		if _, err := io.ReadFull(c, l[:]); err != nil {
			return
		}
		msg := make([]byte, binary.BigEndian.Uint16(l[:]))
		if _, err := io.ReadFull(c, msg); err != nil {
			return
		}
		resp, name, ok := answerDNS(msg)
		if first {
			h.update(i, func(r *Record) { r.Data, r.Query = clip(msg), name })
		} else {
			// Later queries on the same connection get records of their own.
			r := h.snapshot(i)[0]
			r.Data, r.Query = clip(msg), name
			h.add(r)
		}
		if !ok {
			return
		}
		out := binary.BigEndian.AppendUint16(nil, uint16(len(resp)))
		if _, err := c.Write(append(out, resp...)); err != nil {
			return
		}
	}
}

func clip(b []byte) []byte {
	if len(b) > maxData {
		b = b[:maxData]
	}
	return append([]byte(nil), b...)
}

// addrPort converts a net.Addr, falling back to def when it is not TCP/UDP.
func addrPort(a net.Addr, def netip.AddrPort) netip.AddrPort {
	switch a := a.(type) {
	case *net.TCPAddr:
		return unmap(a.AddrPort())
	case *net.UDPAddr:
		return unmap(a.AddrPort())
	}
	return def
}

func unmap(ap netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}
