package lab

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// Listener records what arrives at one outside address and port.
type Listener struct {
	Addr    netip.AddrPort
	Network string // "tcp" or "udp"
	*log
}

// ListenTCP listens on addr (an outside address, port 0 for any) in the
// outside namespace and records every connection with the data read from
// it, until t ends.
func (l *Lab) ListenTCP(t testing.TB, addr netip.AddrPort) *Listener {
	t.Helper()
	var ln net.Listener
	if err := l.Outside(func() (err error) { ln, err = net.Listen("tcp", addr.String()); return err }); err != nil {
		t.Fatalf("lab: listen tcp %s: %v", addr, err)
	}
	t.Cleanup(func() { ln.Close() })
	r := &Listener{Addr: netip.MustParseAddrPort(ln.Addr().String()), Network: "tcp", log: newLog()}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			i := r.add(Record{Kind: "tcp", Local: r.Addr, Remote: netip.MustParseAddrPort(c.RemoteAddr().String())})
			go func() {
				defer c.Close()
				buf := make([]byte, 4096)
				for {
					n, err := c.Read(buf)
					if n > 0 {
						r.appendData(i, buf[:n])
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	return r
}

// ListenUDP does the same for datagrams.
func (l *Lab) ListenUDP(t testing.TB, addr netip.AddrPort) *Listener {
	t.Helper()
	var pc net.PacketConn
	if err := l.Outside(func() (err error) { pc, err = net.ListenPacket("udp", addr.String()); return err }); err != nil {
		t.Fatalf("lab: listen udp %s: %v", addr, err)
	}
	t.Cleanup(func() { pc.Close() })
	r := &Listener{Addr: netip.MustParseAddrPort(pc.LocalAddr().String()), Network: "udp", log: newLog()}
	go func() {
		buf := make([]byte, 65536)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			r.add(Record{Kind: "udp", Local: r.Addr, Remote: netip.MustParseAddrPort(from.String()),
				Data: append([]byte(nil), buf[:n]...)})
		}
	}()
	return r
}

// Start starts cmd in the inside namespace.
func (l *Lab) Start(cmd *exec.Cmd) error {
	return l.Inside(cmd.Start)
}

// Run starts cmd inside and waits for it.
func (l *Lab) Run(cmd *exec.Cmd) error {
	if err := l.Start(cmd); err != nil {
		return err
	}
	return cmd.Wait()
}

// AsNobody makes cmd run as uid and gid 65534 (it needs root to switch).
func AsNobody(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Credential = &syscall.Credential{Uid: 65534, Gid: 65534}
}

// RequireRoot skips t unless the test runs as root, which the
// unprivileged variants need to switch to nobody.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("not root: cannot switch to nobody for the unprivileged variant (an unprivileged run of the suite covers it)")
	}
}

// Dial connects from inside to addr and returns the connection (created in
// the inside namespace, usable from anywhere).
func (l *Lab) Dial(network string, addr netip.AddrPort) (net.Conn, error) {
	var c net.Conn
	err := l.Inside(func() (err error) {
		c, err = net.DialTimeout(network, addr.String(), 10*time.Second)
		return err
	})
	return c, err
}

// checkPath makes sure the inside reaches the outside over the veth, both
// families, before any test relies on it. IPv6 routes of fresh addresses
// are installed from a work queue, so it retries for a bounded while.
func (l *Lab) checkPath() error {
	for _, a := range []netip.Addr{Outside4, Outside6} {
		var ln net.Listener
		if err := l.Outside(func() (err error) {
			ln, err = net.Listen("tcp", netip.AddrPortFrom(a, 0).String())
			return err
		}); err != nil {
			return fmt.Errorf("outside listen on %s: %w", a, err)
		}
		target := netip.MustParseAddrPort(ln.Addr().String())
		var err error
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			var c net.Conn
			if c, err = l.Dial("tcp", target); err == nil {
				c.Close()
				break
			}
			if time.Now().After(deadline) {
				break
			}
		}
		ln.Close()
		if err != nil {
			return fmt.Errorf("inside cannot reach %s over the veth: %w", target, err)
		}
	}
	return nil
}
