// Package fx is what the fixture tests use to reach the fake outside hosts
// of the nettrap integration sandbox. Every connection carries a tag (the
// test's name) so that the fake host records who got through.
//
// These fixtures exist only to be run by nettrap's integration tests,
// inside a private network namespace where these addresses live on lo.
package fx

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"time"
)

// Hosts of the sandbox (documentation and private addresses on its lo).
const (
	External = "203.0.113.7"
	Private  = "10.0.0.1"
	Home     = "192.168.1.1"
)

// timeout only bounds a broken run: in the sandbox a connect either
// succeeds at once or is refused by nettrap.
const timeout = 10 * time.Second

// mustBeLocal refuses a host that is not an address of this machine: in
// the integration sandbox every host above is on lo, and outside it these
// fixtures must not send a single packet anywhere.
func mustBeLocal(host string) error {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return err
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(net.ParseIP(host)) {
			return nil
		}
	}
	if onlyLoopback() {
		// A network namespace with lo alone (nettrap --sealed gives the
		// command one): nothing can leave it, whatever the address.
		return nil
	}
	return fmt.Errorf("fixture: %s is not on this machine: run the fixtures only from nettrap's integration tests, in their private network namespace", host)
}

// onlyLoopback tells whether every interface here is a loopback one.
func onlyLoopback() bool {
	ifs, err := net.Interfaces()
	if err != nil || len(ifs) == 0 {
		return false
	}
	for _, i := range ifs {
		if i.Flags&net.FlagLoopback == 0 {
			return false
		}
	}
	return true
}

// Dial connects over TCP to host:port and sends tag.
func Dial(host string, port int, tag string) error {
	if err := mustBeLocal(host); err != nil {
		return err
	}
	c, err := net.DialTimeout("tcp", net.JoinHostPort(host, strconv.Itoa(port)), timeout)
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Write([]byte(tag))
	return err
}

// Send sends tag in one UDP datagram to host:port from an unconnected
// socket (sendto with a destination).
func Send(host string, port int, tag string) error {
	if err := mustBeLocal(host); err != nil {
		return err
	}
	c, err := net.ListenUDP("udp", nil)
	if err != nil {
		return err
	}
	defer c.Close()
	dst := net.UDPAddrFromAddrPort(netip.AddrPortFrom(netip.MustParseAddr(host), uint16(port)))
	_, err = c.WriteToUDP([]byte(tag), dst)
	return err
}

// Addr is host:port for a fixture that dials by itself (package where,
// whose location lines must name its own code): it refuses a host that
// is not on this machine, as Dial does.
func Addr(host string, port int) (string, error) {
	if err := mustBeLocal(host); err != nil {
		return "", err
	}
	return net.JoinHostPort(host, strconv.Itoa(port)), nil
}

// Timeout bounds a fixture's own dial, as Dial's.
const Timeout = timeout
