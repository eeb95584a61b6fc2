package audit

import (
	"strings"
	"testing"
)

func TestMessage(t *testing.T) {
	base := Record{Syscall: "connect", SockType: "tcp", Dest: "203.0.113.7:443", Class: "external", Decision: "denied", PID: 42, Argv0: "curl"}
	tests := []struct {
		mod  func(*Record)
		want string
	}{
		{func(*Record) {}, "Outbound network blocked: connect tcp 203.0.113.7:443 (external) by pid 42 curl"},
		{func(r *Record) { r.Test = "TestFetch" }, "Outbound network blocked: connect tcp 203.0.113.7:443 (external) during TestFetch"},
		{func(r *Record) { r.Candidates = []string{"TestA", "TestB"} }, "Outbound network blocked: connect tcp 203.0.113.7:443 (external) during one of TestA, TestB (ambiguous: parallel tests were running; rerun with -test.parallel=1 to pin it)"},
		{func(r *Record) {
			r.Candidates = []string{"T1", "T2", "T3", "T4", "T5", "T6", "T7", "T8", "T9", "T10"}
		}, "Outbound network blocked: connect tcp 203.0.113.7:443 (external) during one of T1, T2, T3, T4, T5, T6, T7, T8 and 2 more (ambiguous: parallel tests were running; rerun with -test.parallel=1 to pin it)"},
		{func(r *Record) { r.Test = "collection" }, "Outbound network blocked: connect tcp 203.0.113.7:443 (external) at collection time (package init, TestMain, or between tests)"},
		{func(r *Record) { r.Decision = "would-deny" }, "audit: would block: connect tcp 203.0.113.7:443 (external) by pid 42 curl"},
		{func(r *Record) { r.ABI = "i386"; r.Dest = ""; r.SockType = ""; r.Reason = "not decoded" }, "Outbound network blocked: connect (i386 ABI) by pid 42 curl: not decoded"},
		// --sealed: a marked test's denial says the marker was ignored.
		{func(r *Record) {
			r.Test, r.Marked, r.Reason = "TestLive", true, ReasonMarkerIgnored+"; external destination"
		},
			"Outbound network blocked: connect tcp 203.0.113.7:443 (external) during TestLive: " + ReasonMarkerIgnored + "; external destination"},
		// The reason is left out only when it repeats the class.
		{func(r *Record) { r.Reason = "external destination" },
			"Outbound network blocked: connect tcp 203.0.113.7:443 (external) by pid 42 curl"},
		{func(r *Record) {
			r.Dest, r.Class, r.Reason = "0.0.0.0:443", "unspecified", "listen on 127.0.0.1:0"
		},
			"Outbound network blocked: connect tcp 0.0.0.0:443 (unspecified) by pid 42 curl: listen on 127.0.0.1:0"},
		{func(r *Record) { r.Dest, r.Class, r.Reason = "10.0.0.53:53", "dns", "DNS query" },
			"Outbound network blocked: connect tcp 10.0.0.53:53 (dns) by pid 42 curl: DNS query"},
		{func(r *Record) {
			r.Syscall, r.SockType, r.Dest, r.Class, r.Reason = "setsockopt", "udp", "239.1.2.3", "multicast", "joining 239.1.2.3"
		}, "Outbound network blocked: setsockopt udp 239.1.2.3 (multicast) by pid 42 curl: joining 239.1.2.3"},
		// A lookup nettrap's sinkhole read is named.
		{func(r *Record) {
			r.SockType, r.Dest, r.Class, r.Lookup, r.Test = "udp", "192.0.2.53:53", "dns", "TXT _grpc_config.localhost", "TestDial"
		}, "DNS lookup blocked: _grpc_config.localhost during TestDial: " + RemedyLookupTest},
		{func(r *Record) {
			r.SockType, r.Dest, r.Class, r.Lookup = "tcp", "[2001:db8::53]:53", "dns", "A example.com"
		},
			"DNS lookup blocked: example.com by pid 42 curl: " + RemedyLookupProcess},
		// A marked record denied for another reason (at collection time) keeps the short line.
		{func(r *Record) { r.Test, r.Marked, r.Reason = "collection", true, "external destination" },
			"Outbound network blocked: connect tcp 203.0.113.7:443 (external) at collection time (package init, TestMain, or between tests)"},
	}
	for _, tt := range tests {
		r := base
		tt.mod(&r)
		if got := Message(r, r.Test == "", ParallelBinary); got != tt.want {
			t.Errorf("Message(%+v)\n got %q\nwant %q", r, got, tt.want)
		}
	}
}

// A blocked lookup's line says what to do, fitting who looked up: the
// test (mock, or mark it), collection time (no marker helps), a marked
// test under --sealed (the marker counts for nothing), a process. The
// start stays "DNS lookup blocked: NAME who", which users and tests
// match.
func TestLookupMessageRemedy(t *testing.T) {
	base := Record{Syscall: "sendto", SockType: "udp", Dest: "192.0.2.53:53", Class: "dns", Decision: Denied,
		Lookup: "A httpbin.org", Reason: ReasonDNSRefused, PID: 42, Argv0: "curl"}
	for _, tc := range []struct {
		name  string
		mod   func(*Record)
		start string
		want  []string
	}{
		{"test", func(r *Record) { r.Test = "TestTraceInfo" },
			"DNS lookup blocked: httpbin.org during TestTraceInfo: ",
			[]string{"mock the resolver or the client", "mark the test", "docs/tests.md#the-marker"}},
		{"ambiguous", func(r *Record) { r.Candidates = []string{"TestA", "TestB"} },
			"DNS lookup blocked: httpbin.org during one of TestA, TestB (ambiguous",
			[]string{"to pin it): mock the resolver or the client", "mark the test"}},
		{"collection", func(r *Record) { r.Test, r.Marked = Collection, true },
			"DNS lookup blocked: httpbin.org" + AtCollection + ": ",
			[]string{"mock the resolver or the client", "docs/tests.md#collection-time"}},
		{"sealed", func(r *Record) { r.Test, r.Marked = "TestLive", true },
			"DNS lookup blocked: httpbin.org during TestLive: ",
			[]string{ReasonMarkerIgnored, "mock the resolver or the client"}},
		{"process", func(*Record) {},
			"DNS lookup blocked: httpbin.org by pid 42 curl: ",
			[]string{"--allow", "docs/flags.md"}},
	} {
		r := base
		tc.mod(&r)
		got := Message(r, r.Test == "" && len(r.Candidates) == 0, ParallelBinary)
		if !strings.HasPrefix(got, tc.start) {
			t.Errorf("%s: line %q, want it to start %q", tc.name, got, tc.start)
		}
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: line %q lacks %q", tc.name, got, w)
			}
		}
	}
	// Where no marker can help, the line must not advise one.
	r := base
	r.Test = Collection
	if got := Message(r, false, ParallelBinary); strings.Contains(got, "mark the test") {
		t.Errorf("collection time: line %q advises a marker", got)
	}
}

// TestLookupName: a line names the name a query asked for, not its
// type, so that a lookup's queries (A, AAAA, a retry) word one line;
// what could be read of a malformed query stays as it is.
func TestLookupName(t *testing.T) {
	for _, c := range []struct{ lookup, name string }{
		{"A example.com", "example.com"},
		{"AAAA example.com", "example.com"},
		{"TXT _grpc_config.localhost", "_grpc_config.localhost"},
		{"TYPE65 example.com", "example.com"},
		{"example.com", "example.com"},
		{"(malformed query)", "(malformed query)"},
	} {
		if got := LookupName(c.lookup); got != c.name {
			t.Errorf("LookupName(%q) = %q, want %q", c.lookup, got, c.name)
		}
	}
	r := Record{Syscall: "connect", SockType: "udp", Class: "dns", Decision: Denied, Test: "TestDial", Reason: ReasonDNSRefused}
	a, aaaa := r, r
	a.Lookup, a.Dest = "A example.com", "192.0.2.53:53"
	aaaa.Lookup, aaaa.Dest = "AAAA example.com", "192.0.2.54:53"
	if la, laaaa := Message(a, false, ParallelGoTest), Message(aaaa, false, ParallelGoTest); la != laaaa {
		t.Errorf("two queries of one lookup word two lines:\n%s\n%s", la, laaaa)
	}
	// No name to name: the line says where the query went.
	m := a
	m.Lookup = LookupMalformed
	if got, want := Message(m, false, ParallelGoTest), "DNS lookup blocked: (malformed query) via 192.0.2.53:53 during TestDial: "; !strings.HasPrefix(got, want) {
		t.Errorf("malformed query: line %q, want it to start %q", got, want)
	}
}

// TestMessageWhere: a record with what the caller's stack showed says
// where, and whose goroutine, after who; one without is as before.
func TestMessageWhere(t *testing.T) {
	base := Record{Syscall: "connect", SockType: "tcp", Dest: "203.0.113.7:443", Class: "external", Decision: Denied,
		Test: "TestFetch", Reason: "external destination"}
	where := &Frame{Func: "example.com/shop/prices.fetchQuote", File: "prices/client.go", Line: 31}
	tests := []struct {
		o    Origin
		want string
	}{
		{Origin{}, " during TestFetch"},
		{Origin{Stack: []Frame{{Func: "net.dial", File: "/go/src/net/dial.go", Line: 5}}}, " during TestFetch"},
		{Origin{Stack: []Frame{{Func: "net.dial", File: "/go/src/net/dial.go", Line: 5}}, Goroutine: "net/http.(*Transport).startDialConnForLocked.func1"},
			" during TestFetch, in a goroutine of http.(*Transport).startDialConnForLocked.func1"},
		{Origin{Where: where}, " during TestFetch at prices/client.go:31 (prices.fetchQuote)"},
		{Origin{Where: where, CalledFrom: &Frame{Func: "example.com/shop/prices.TestFetch", File: "prices/prices_test.go", Line: 48}},
			" during TestFetch at prices/client.go:31 (prices.fetchQuote, called from prices/prices_test.go:48)"},
		{Origin{Where: where, CalledFrom: &Frame{Func: "example.com/shop/prices_test.TestFetch", File: "other/x_test.go", Line: 8}},
			" during TestFetch at prices/client.go:31 (prices.fetchQuote, called from other/x_test.go:8)"},
		{Origin{Where: where, CalledFrom: &Frame{Func: "example.com/shop/prices.TestFetch.func1", File: "prices/prices_test.go", Line: 50},
			Goroutine: "example.com/shop/prices.TestFetch.func1"},
			" during TestFetch at prices/client.go:31 (prices.fetchQuote, called from prices/prices_test.go:50 in a goroutine)"},
		{Origin{Where: where, Goroutine: "example.com/shop/prices.(*Server).loop"},
			" during TestFetch at prices/client.go:31 (prices.fetchQuote, in a goroutine of prices.(*Server).loop)"},
		{Origin{Where: where, CalledFrom: &Frame{Func: "example.com/shop/prices.TestA.func1", File: "prices/leak_test.go", Line: 12},
			Goroutine: "example.com/shop/prices.TestA.func1", StartedBy: "TestA", StartedByEnded: true},
			" during TestFetch at prices/client.go:31 (prices.fetchQuote), from a goroutine started by TestA at prices/leak_test.go:12, which had ended"},
		{Origin{Where: &Frame{Func: "example.com/shop/prices.TestA.func1", File: "prices/leak_test.go", Line: 12}, StartedBy: "TestA"},
			" during TestFetch at prices/leak_test.go:12 (prices.TestA.func1), from a goroutine started by TestA"},
		// Unowned: test code of another test's by name only; the
		// goroutine's entry is named, no test as its starter.
		{Origin{Where: where, CalledFrom: &Frame{Func: "example.com/shop/prices.TestA.func1", File: "prices/leak_test.go", Line: 12},
			Goroutine: "example.com/shop/prices.TestA.func1", Unowned: true},
			" during TestFetch at prices/client.go:31 (prices.fetchQuote, called from prices/leak_test.go:12), in a goroutine of prices.TestA.func1 that no running test is known to have started"},
		{Origin{Where: where, CalledFrom: &Frame{Func: "example.com/shop/prices.TestA.func1", File: "prices/leak_test.go", Line: 12},
			Goroutine: "sync.(*WaitGroup).Go.func1", Unowned: true},
			" during TestFetch at prices/client.go:31 (prices.fetchQuote, called from prices/leak_test.go:12), in a goroutine of sync.(*WaitGroup).Go.func1 that no running test is known to have started"},
		{Origin{Where: where, Unowned: true},
			" during TestFetch at prices/client.go:31 (prices.fetchQuote), in a goroutine that no running test is known to have started"},
	}
	for _, tt := range tests {
		r := base
		r.Origin = tt.o
		want := "Outbound network blocked: connect tcp 203.0.113.7:443 (external)" + tt.want
		if got := Message(r, false, ParallelGoTest); got != want {
			t.Errorf("got  %s\nwant %s", got, want)
		}
	}
	frames := []Frame{*where, {}, {Func: "example.com/shop/prices.TestFetch", File: "prices/prices_test.go", Line: 48}}
	if got, want := FramesText(frames), "\nprices/client.go:31 (prices.fetchQuote)\n...\nprices/prices_test.go:48 (prices.TestFetch)"; got != want {
		t.Errorf("frames text %q, want %q", got, want)
	}
	if got := FramesText(nil); got != "" {
		t.Errorf("no frames: text %q", got)
	}
	r := base
	if r.Blamed() != "TestFetch" {
		t.Errorf("blamed %q", r.Blamed())
	}
	r.StartedBy = "TestA"
	if r.Blamed() != "TestA" {
		t.Errorf("blamed %q, want TestA", r.Blamed())
	}
}
