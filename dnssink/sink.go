package dnssink

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Defaults for Config's zero fields.
const (
	DefaultIdleTimeout = 10 * time.Second
	DefaultMaxConns    = 256
)

// Config configures a Sink. The zero Config is ready to use.
type Config struct {
	// Stray, when not nil, is called for each query from a source no
	// Expect covers, before it is answered. network is "udp" or "tcp".
	Stray func(network string, from netip.AddrPort, q Query)
	// IdleTimeout bounds the time a TCP client has to send each whole
	// message (and to read the answer) before its connection is closed.
	IdleTimeout time.Duration
	// MaxConns bounds the open TCP connections; connections beyond it are
	// closed on accept, so a flood cannot exhaust descriptors.
	MaxConns int
}

type key struct {
	network string // "udp" or "tcp"
	from    netip.AddrPort
}

// Sink is a DNS server on loopback that answers every query REFUSED and
// reports each one to the handler expecting its source. It is safe for
// concurrent use.
type Sink struct {
	cfg   Config
	udp   [2]*net.UDPConn     // [0] IPv4, [1] IPv6 (nil when absent)
	tcp   [2]*net.TCPListener // same
	done  chan struct{}
	wg    sync.WaitGroup
	mu    sync.Mutex
	want  map[key]func(Query)
	conns map[net.Conn]struct{}
	once  sync.Once
}

// Listen is Config{}.Listen.
func Listen() (*Sink, error) { return Config{}.Listen() }

// Listen opens UDP and TCP on 127.0.0.1 and, when the host has IPv6
// loopback, on [::1], each family on one port for both protocols when that
// port is free for TCP too, and starts serving.
func (c Config) Listen() (*Sink, error) {
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.MaxConns <= 0 {
		c.MaxConns = DefaultMaxConns
	}
	s := &Sink{cfg: c, done: make(chan struct{}),
		want: map[key]func(Query){}, conns: map[net.Conn]struct{}{}}
	loopback := []netip.Addr{netip.AddrFrom4([4]byte{127, 0, 0, 1}), netip.IPv6Loopback()}
	for i, ip := range loopback {
		u, l, err := listenPair(ip)
		if i == 1 && noIPv6(err) {
			break
		}
		if err != nil {
			s.closeAll()
			return nil, fmt.Errorf("dnssink: listen on %s: %w", ip, err)
		}
		s.udp[i], s.tcp[i] = u, l
	}
	for i := range s.udp {
		if s.udp[i] == nil {
			continue
		}
		s.wg.Add(2)
		go s.serveUDP(s.udp[i])
		go s.serveTCP(s.tcp[i])
	}
	return s, nil
}

// listenPair opens UDP on ip:0 and TCP on the same port if it is free,
// else on another one.
func listenPair(ip netip.Addr) (*net.UDPConn, *net.TCPListener, error) {
	u, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(ip, 0)))
	if err != nil {
		return nil, nil, err
	}
	port := u.LocalAddr().(*net.UDPAddr).AddrPort().Port()
	l, err := net.ListenTCP("tcp", net.TCPAddrFromAddrPort(netip.AddrPortFrom(ip, port)))
	if err != nil {
		l, err = net.ListenTCP("tcp", net.TCPAddrFromAddrPort(netip.AddrPortFrom(ip, 0)))
	}
	if err != nil {
		u.Close()
		return nil, nil, err
	}
	return u, l, nil
}

// noIPv6 tells "this host has no IPv6 loopback" from a real failure.
func noIPv6(err error) bool {
	return errors.Is(err, unix.EADDRNOTAVAIL) || errors.Is(err, unix.EAFNOSUPPORT)
}

// Addr returns the address the sink serves network ("udp" or "tcp") on, for
// IPv6 loopback when v6. It is invalid when that family is absent.
func (s *Sink) Addr(network string, v6 bool) netip.AddrPort {
	i := 0
	if v6 {
		i = 1
	}
	switch normNetwork(network) {
	case "udp":
		if s.udp[i] != nil {
			return s.udp[i].LocalAddr().(*net.UDPAddr).AddrPort()
		}
	case "tcp":
		if s.tcp[i] != nil {
			return s.tcp[i].Addr().(*net.TCPAddr).AddrPort()
		}
	}
	return netip.AddrPort{}
}

// Expect routes queries that arrive over network from the socket bound to
// from (the target socket's local address, getsockname) to h, called once
// per query before it is answered, possibly from several goroutines at
// once; UDP queries are served one at a time, so h should not block for
// long. A later Expect for the same source replaces h.
//
// To see the first query, call Expect before the target can send it: after
// a redirected connect and before answering the notification. A send on an
// unbound UDP socket binds it as it sends, so the query may arrive before
// getsockname can tell the source; binding the copy to the wildcard
// address and port 0 first (what the kernel's autobind does anyway) gives
// the source in time. A query that arrives earlier goes to Config.Stray,
// with the same source.
func (s *Sink) Expect(network string, from netip.AddrPort, h func(Query)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.want[keyOf(network, from)] = h
}

// Forget undoes Expect.
func (s *Sink) Forget(network string, from netip.AddrPort) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.want, keyOf(network, from))
}

// Close stops serving, closes every socket and waits for its goroutines.
func (s *Sink) Close() error {
	s.once.Do(func() {
		close(s.done)
		s.closeAll()
	})
	s.wg.Wait()
	return nil
}

func (s *Sink) closeAll() {
	for i := range s.udp {
		if s.udp[i] != nil {
			s.udp[i].Close()
		}
		if s.tcp[i] != nil {
			s.tcp[i].Close()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		c.Close()
	}
}

// keyOf normalises a source: a v4-mapped address is the IPv4 address the
// IPv4 socket sees, and zones play no part on loopback.
func keyOf(network string, from netip.AddrPort) key {
	ip := from.Addr().Unmap().WithZone("")
	return key{normNetwork(network), netip.AddrPortFrom(ip, from.Port())}
}

func normNetwork(network string) string {
	switch {
	case strings.HasPrefix(network, "udp"):
		return "udp"
	case strings.HasPrefix(network, "tcp"):
		return "tcp"
	}
	return network
}

// report hands q to the handler expecting from, or to Stray.
func (s *Sink) report(network string, from netip.AddrPort, q Query) {
	k := keyOf(network, from)
	s.mu.Lock()
	h := s.want[k]
	s.mu.Unlock()
	switch {
	case h != nil:
		h(q)
	case s.cfg.Stray != nil:
		s.cfg.Stray(k.network, k.from, q)
	}
}

// serveUDP answers datagrams until the socket is closed: one datagram is
// one message; 64 KiB holds the largest one.
func (s *Sink) serveUDP(c *net.UDPConn) {
	defer s.wg.Done()
	buf := make([]byte, 1<<16)
	for {
		n, from, err := c.ReadFromUDPAddrPort(buf)
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			continue // e.g. a queued ICMP error; the socket still works
		}
		msg := buf[:n]
		q, _ := Parse(msg)
		s.report("udp", from, q)
		if resp := Refused(msg); resp != nil {
			c.WriteToUDPAddrPort(resp, from) // the client may be gone: nothing to do
		}
	}
}
