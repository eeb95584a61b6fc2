package dnssink

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// recorder collects what a Sink reports, through Expect or Stray.
type recorder struct {
	mu     sync.Mutex
	got    []Query
	strays []stray
}

type stray struct {
	network string
	from    netip.AddrPort
	q       Query
}

func (r *recorder) handle(q Query) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, q)
}

func (r *recorder) stray(network string, from netip.AddrPort, q Query) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.strays = append(r.strays, stray{network, from, q})
}

func (r *recorder) queries() []Query {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

func (r *recorder) strayed() []stray {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.strays)
}

// startSink opens a sink whose strays go to rec and closes it with t.
func startSink(t *testing.T, cfg Config, rec *recorder) *Sink {
	t.Helper()
	cfg.Stray = rec.stray
	s, err := cfg.Listen()
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func localAddr(c net.Conn) netip.AddrPort {
	switch a := c.LocalAddr().(type) {
	case *net.UDPAddr:
		return a.AddrPort()
	case *net.TCPAddr:
		return a.AddrPort()
	}
	return netip.AddrPort{}
}

// families lists the loopback families the sink serves.
func families(s *Sink) []bool {
	if s.Addr("udp", true).IsValid() {
		return []bool{false, true}
	}
	return []bool{false}
}

// resolverTo is a Go resolver whose every connection goes to the sink over
// network, whatever it asked for, and is expected by rec: what nettrap's
// supervisor does when it redirects a lookup.
func resolverTo(s *Sink, network string, v6 bool, rec *recorder) *net.Resolver {
	addr := s.Addr(network, v6).String()
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		s.Expect(network, localAddr(c), rec.handle)
		return c, nil
	}}
}

// checkRefusedErr: the lookup failed on the answer, not on a timeout.
func checkRefusedErr(t *testing.T, err error) {
	t.Helper()
	var de *net.DNSError
	if !errors.As(err, &de) {
		t.Fatalf("lookup error = %v, want a *net.DNSError", err)
	}
	// REFUSED is "server misbehaving", not temporary (SERVFAIL would be).
	if de.Err != "server misbehaving" || de.IsTimeout || de.IsTemporary || de.IsNotFound {
		t.Errorf("lookup error = %+v, want a permanent server misbehaving", de)
	}
}

// checkSeen: every wanted name/type reached the handler, nothing else was
// malformed, and nothing strayed.
func checkSeen(t *testing.T, rec *recorder, want ...string) {
	t.Helper()
	var seen []string
	for _, q := range rec.queries() {
		if q.Err != nil {
			t.Errorf("query %+v reported with error %v", q, q.Err)
		}
		seen = append(seen, q.Type+" "+q.Name)
	}
	for _, w := range want {
		if !slices.Contains(seen, w) {
			t.Errorf("handler saw %q, want %q among them", seen, w)
		}
	}
	if s := rec.strayed(); len(s) > 0 {
		t.Errorf("strays: %+v", s)
	}
}

func TestGoResolver(t *testing.T) {
	s := startSink(t, Config{}, &recorder{})
	for _, v6 := range families(s) {
		for _, network := range []string{"udp", "tcp"} {
			name := network + "4"
			if v6 {
				name = network + "6"
			}
			t.Run(name+"/LookupHost", func(t *testing.T) {
				rec := &recorder{}
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				_, err := resolverTo(s, network, v6, rec).LookupHost(ctx, "blocked.example.")
				checkRefusedErr(t, err)
				checkSeen(t, rec, "A blocked.example", "AAAA blocked.example")
			})
			t.Run(name+"/LookupTXT", func(t *testing.T) {
				rec := &recorder{}
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				_, err := resolverTo(s, network, v6, rec).LookupTXT(ctx, "_grpc_config.localhost")
				checkRefusedErr(t, err)
				checkSeen(t, rec, "TXT _grpc_config.localhost")
			})
		}
	}
}

// dialSink connects to the sink and returns the conn and its local address.
func dialSink(t *testing.T, s *Sink, network string, v6 bool) net.Conn {
	t.Helper()
	c, err := net.Dial(network, s.Addr(network, v6).String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// readAnswer reads one UDP answer and parses its header.
func readAnswer(t *testing.T, c net.Conn) dnsmessage.Header {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(time.Minute)) // a safety net, not an assertion
	buf := make([]byte, 1<<16)
	n, err := c.Read(buf)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	var p dnsmessage.Parser
	h, err := p.Start(buf[:n])
	if err != nil {
		t.Fatalf("answer: %v", err)
	}
	return h
}

func TestUDPStrayAndMalformed(t *testing.T) {
	rec := &recorder{}
	s := startSink(t, Config{}, rec)
	c := dialSink(t, s, "udp", false)
	from := localAddr(c)
	// Garbage and a response get no answer: the first answer read is the
	// one to the query sent after them (datagrams on loopback keep order).
	c.Write([]byte{0xAB, 0xCD, 1})
	c.Write(rawMsg(0x2222, flagQR, 1, wireName("resp"), tail(1)))
	c.Write(rawMsg(0x3333, testRD, 1, []byte{0x40}))
	c.Write(query(t, 0x4444, "stray.example.", dnsmessage.TypeA))
	if h := readAnswer(t, c); h.ID != 0x3333 || h.RCode != dnsmessage.RCodeRefused {
		t.Errorf("first answer %+v, want REFUSED to the malformed question 0x3333", h)
	}
	if h := readAnswer(t, c); h.ID != 0x4444 || h.RCode != dnsmessage.RCodeRefused {
		t.Errorf("second answer %+v, want REFUSED to 0x4444", h)
	}
	got := rec.strayed()
	if len(got) != 4 {
		t.Fatalf("%d strays, want 4: %+v", len(got), got)
	}
	for i, want := range []error{ErrShort, ErrNotQuery, ErrBadName, nil} {
		if got[i].network != "udp" || got[i].from != from || !errors.Is(got[i].q.Err, want) {
			t.Errorf("stray %d = %+v, want udp from %v with error %v", i, got[i], from, want)
		}
	}
	if q := got[3].q; q.Name != "stray.example" || q.Type != "A" || q.ID != 0x4444 {
		t.Errorf("stray query %+v", q)
	}
	if q := got[2].q; q.Name != "" || q.ID != 0x3333 {
		t.Errorf("malformed query %+v, want no name", q)
	}
}

func TestExpectForget(t *testing.T) {
	rec, exp := &recorder{}, &recorder{}
	s := startSink(t, Config{}, rec)
	c := dialSink(t, s, "udp", false)
	from := localAddr(c)
	// The supervisor may see a v6 socket's v4-mapped address, and say udp4.
	mapped := netip.AddrPortFrom(netip.AddrFrom16(from.Addr().As16()), from.Port())
	s.Expect("udp4", mapped, exp.handle)
	s.Expect("tcp", from, rec.handle) // another network: never matches this socket
	c.Write(query(t, 1, "one.example.", dnsmessage.TypeA))
	readAnswer(t, c)
	s.Forget("udp", from)
	c.Write(query(t, 2, "two.example.", dnsmessage.TypeA))
	readAnswer(t, c)
	if got := exp.queries(); len(got) != 1 || got[0].Name != "one.example" {
		t.Errorf("expected handler saw %+v, want one.example only", got)
	}
	if got := rec.strayed(); len(got) != 1 || got[0].q.Name != "two.example" {
		t.Errorf("strays %+v, want two.example only", got)
	}
	if got := rec.queries(); len(got) != 0 {
		t.Errorf("tcp handler saw udp queries: %+v", got)
	}
}

func TestAddrs(t *testing.T) {
	s := startSink(t, Config{}, &recorder{})
	for _, v6 := range families(s) {
		for _, n := range []string{"udp", "tcp"} {
			a := s.Addr(n, v6)
			if !a.Addr().IsLoopback() || a.Addr().Is6() != v6 || a.Port() == 0 {
				t.Errorf("Addr(%s, v6=%v) = %v", n, v6, a)
			}
		}
	}
	if a := s.Addr("sctp", false); a.IsValid() {
		t.Errorf("Addr(sctp) = %v, want invalid", a)
	}
}

func TestCloseStopsEverything(t *testing.T) {
	rec := &recorder{}
	s, err := Config{Stray: rec.stray}.Listen()
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", s.Addr("tcp", false).String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Handshake: an answered query proves the connection is being served.
	writeFrame(t, c, query(t, 1, "x.", dnsmessage.TypeA))
	readFrameT(t, c)
	s.Close()
	s.Close() // idempotent
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Errorf("connection still open after Close")
	}
	for _, v6 := range families(s) {
		if _, err := net.Dial("tcp", s.Addr("tcp", v6).String()); err == nil {
			t.Errorf("tcp v6=%v still accepting after Close", v6)
		}
	}
}

// TestConcurrentAttribution: many lookups at once over both protocols;
// each handler sees its own name and nothing else.
func TestConcurrentAttribution(t *testing.T) {
	s := startSink(t, Config{}, &recorder{})
	const n = 16
	recs := make([]*recorder, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		recs[i] = &recorder{}
		network := []string{"udp", "tcp"}[i%2]
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_, errs[i] = resolverTo(s, network, false, recs[i]).LookupTXT(ctx, fmt.Sprintf("n%d.example.", i))
		})
	}
	wg.Wait()
	for i, rec := range recs {
		checkRefusedErr(t, errs[i])
		want := fmt.Sprintf("n%d.example", i)
		got := rec.queries()
		if len(got) == 0 {
			t.Errorf("lookup %d: handler saw nothing", i)
		}
		for _, q := range got {
			if q.Name != want || q.Type != "TXT" {
				t.Errorf("lookup %d: handler saw %+v, want TXT %s", i, q, want)
			}
		}
	}
}
