package guard

import (
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/audit"
	"github.com/nettrap/nettrap/bpf"
	"github.com/nettrap/nettrap/classify"
	"github.com/nettrap/nettrap/decision"
	"github.com/nettrap/nettrap/dnssink"
	"github.com/nettrap/nettrap/policy"
)

// fakeSink records what the guard expects of the sinkhole.
type fakeSink struct {
	mu      sync.Mutex
	expects map[netip.AddrPort]func(dnssink.Query)
}

func (s *fakeSink) Addr(network string, v6 bool) netip.AddrPort {
	if v6 {
		return netip.MustParseAddrPort("[::1]:5353")
	}
	return netip.MustParseAddrPort("127.0.0.1:5353")
}

func (s *fakeSink) Expect(network string, from netip.AddrPort, h func(dnssink.Query)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expects[from] = h
}

func (s *fakeSink) Forget(network string, from netip.AddrPort) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.expects, from)
}

func (s *fakeSink) handler(from netip.AddrPort) func(dnssink.Query) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.expects[from]
}

// dnsCall is a connect of a UDP socket to the nameserver.
func dnsCall(t *testing.T) *decision.Call {
	t.Helper()
	c := call(bpf.Connect, inet("192.0.2.53:53"))
	c.Task = task("udp")
	return c
}

func TestDNSRedirectNamesTheLookup(t *testing.T) {
	local := netip.MustParseAddrPort("127.0.0.1:40000")
	for _, tc := range []struct {
		name   string
		finish func(rd *decision.Redirect, s *fakeSink, g *Guard)
		want   []string // lines, in order
		lookup string
		errno  string
	}{
		{"query", func(rd *decision.Redirect, s *fakeSink, g *Guard) {
			rd.Done(local, true)
			s.handler(local)(dnssink.Query{Name: "_grpc_config.localhost", Type: "TXT"})
		}, []string{"nettrap: DNS lookup blocked: _grpc_config.localhost by pid"}, "TXT _grpc_config.localhost", ""},
		{"not redirected", func(rd *decision.Redirect, s *fakeSink, g *Guard) {
			rd.Done(netip.AddrPort{}, false)
		}, []string{"nettrap: Outbound network blocked: connect udp 192.0.2.53:53 (dns) by pid"}, "", "EPERM"},
		{"no query", func(rd *decision.Redirect, s *fakeSink, g *Guard) {
			rd.Done(local, true)
			g.EndLookups()
			if s.handler(local) != nil {
				t.Error("EndLookups left the socket expected")
			}
		}, []string{"nettrap: Outbound network blocked: connect udp 192.0.2.53:53 (dns) by pid"}, "", ""},
		// The command sent its query and exited before the sink read it:
		// EndLookups waits for the query rather than cut the name off.
		{"query read after the command ended", func(rd *decision.Redirect, s *fakeSink, g *Guard) {
			rd.Done(local, true)
			h := s.handler(local)
			ended := make(chan struct{})
			go func() { g.EndLookups(); close(ended) }()
			select {
			case <-ended:
				t.Fatal("EndLookups returned before the socket's first query or its wait was over")
			case <-time.After(50 * time.Millisecond):
			}
			h(dnssink.Query{Name: "example.com", Type: "A"})
			<-ended
		}, []string{"nettrap: DNS lookup blocked: example.com by pid"}, "A example.com", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, policy.Policy{})
			f.g.Resolvers = &classify.Resolvers{Nameservers: []netip.Addr{netip.MustParseAddr("192.0.2.53")}}
			sink := &fakeSink{expects: map[netip.AddrPort]func(dnssink.Query){}}
			f.g.Sink = sink
			a := f.g.Decide(dnsCall(t))
			if a.Allowed() || a.Errno() != unix.EPERM || a.Redirect() == nil {
				t.Fatalf("answer %+v, want EPERM with a redirect", a)
			}
			if a.Redirect().To4 != sink.Addr("udp", false) || a.Redirect().To6 != sink.Addr("udp", true) {
				t.Errorf("redirect to %v and %v, want the sink's", a.Redirect().To4, a.Redirect().To6)
			}
			if f.msgs.Len() != 0 {
				t.Fatalf("recorded before Done: %s", f.msgs)
			}
			tc.finish(a.Redirect(), sink, f.g)
			recs := f.records(t)
			if len(recs) != 1 || recs[0].Lookup != tc.lookup || recs[0].Errno != tc.errno || recs[0].Class != "dns" {
				t.Fatalf("records %+v, want one with lookup %q errno %q", recs, tc.lookup, tc.errno)
			}
			for _, w := range tc.want {
				if !strings.Contains(f.msgs.String(), w) {
					t.Errorf("messages lack %q:\n%s", w, f.msgs)
				}
			}
			if n := f.g.Counts().Denied; n != 1 {
				t.Errorf("%d denials counted, want 1", n)
			}
		})
	}
}

// One lookup, one line: a resolver's A and AAAA queries at each of two
// nameservers, each on a socket of its own, are four records (their
// types and nameservers kept) and one line, which names the name.
func TestDNSLookupOneLine(t *testing.T) {
	f := newFixture(t, policy.Policy{})
	f.g.Resolvers = &classify.Resolvers{Nameservers: []netip.Addr{netip.MustParseAddr("192.0.2.53"), netip.MustParseAddr("192.0.2.54")}}
	sink := &fakeSink{expects: map[netip.AddrPort]func(dnssink.Query){}}
	f.g.Sink = sink
	port := uint16(40000)
	for _, ns := range []string{"192.0.2.53:53", "192.0.2.54:53"} {
		for _, typ := range []string{"A", "AAAA"} {
			c := call(bpf.Connect, inet(ns))
			c.Task = task("udp")
			a := f.g.Decide(c)
			if a.Redirect() == nil {
				t.Fatalf("%s %s: not redirected: %+v", ns, typ, a)
			}
			local := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port)
			port++
			a.Redirect().Done(local, true)
			sink.handler(local)(dnssink.Query{Name: "example.com", Type: typ})
		}
	}
	f.g.EndLookups()
	want := "nettrap: DNS lookup blocked: example.com by pid 4242 curl: " + audit.RemedyLookupProcess + "\n"
	if got := f.msgs.String(); got != want {
		t.Errorf("messages\n%s\nwant one line\n%s", got, want)
	}
	var got []string
	for _, r := range f.records(t) {
		got = append(got, r.Lookup+" via "+r.Dest)
	}
	slices.Sort(got)
	if w := []string{"A example.com via 192.0.2.53:53", "A example.com via 192.0.2.54:53", "AAAA example.com via 192.0.2.53:53", "AAAA example.com via 192.0.2.54:53"}; !slices.Equal(got, w) {
		t.Errorf("records %q, want one per query, %q", got, w)
	}
}

// Only a denied attempt at a nameserver is redirected: not an external
// destination, not in audit mode, not without a sink.
func TestDNSRedirectOnlyDeniedLookups(t *testing.T) {
	f := newFixture(t, policy.Policy{})
	f.g.Resolvers = &classify.Resolvers{Nameservers: []netip.Addr{netip.MustParseAddr("192.0.2.53")}}
	if a := f.g.Decide(dnsCall(t)); a.Redirect() != nil {
		t.Errorf("redirect without a sink: %+v", a)
	}
	f.g.Sink = &fakeSink{expects: map[netip.AddrPort]func(dnssink.Query){}}
	c := dnsCall(t)
	c.Dests = []classify.Dest{inet("203.0.113.7:53")}
	if a := f.g.Decide(c); a.Redirect() != nil {
		t.Errorf("external destination redirected: %+v", a)
	}
	f.g.Policy = &policy.Policy{Mode: policy.Audit}
	if a := f.g.Decide(dnsCall(t)); a.Redirect() != nil || !a.Allowed() {
		t.Errorf("audit mode: %+v, want allowed, no redirect", a)
	}
}
