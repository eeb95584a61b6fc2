package guard

import (
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/nettrap/nettrap/audit"
	"github.com/nettrap/nettrap/bpf"
	"github.com/nettrap/nettrap/callstack"
	"github.com/nettrap/nettrap/decision"
	"github.com/nettrap/nettrap/policy"
)

// stackTask is a caller whose stack can be read (decision.StackReader),
// as an engine will give it: the stack is built by hand, as callstack
// symbolizes a test binary of module example.com/shop.
type stackTask struct {
	decision.FixedTask
	stack *callstack.Stack
	err   error
	asked *atomic.Int32
	tab   *callstack.Table // nil: shopTable
}

func (t stackTask) Stack() (*callstack.Stack, *callstack.Table, error) {
	if t.asked != nil {
		t.asked.Add(1)
	}
	if t.tab != nil {
		return t.stack, t.tab, t.err
	}
	return t.stack, shopTable, t.err
}

var shopTable = &callstack.Table{Module: "example.com/shop"}

const shopDir = "/home/u/shop/"

// fr is a frame of package prices (file in shop/prices) or of the
// standard library.
func fr(fn, file string, line int) callstack.Frame {
	switch {
	case strings.HasPrefix(fn, "prices."):
		fn, file = "example.com/shop/"+fn, shopDir+"prices/"+file
	case strings.HasPrefix(fn, "main."):
		file = "/tmp/go-build1/b001/" + file
	default:
		file = "/usr/lib/go/src/" + file
	}
	return callstack.Frame{Func: fn, File: file, Line: line}
}

// dial is the innermost part of every stack: net's frames down to the
// system call.
var dial = []callstack.Frame{
	fr("syscall.connect", "syscall/zsyscall_linux_amd64.go", 1481),
	fr("net.(*netFD).connect", "net/fd_unix.go", 59),
	fr("net.(*Dialer).DialContext", "net/dial.go", 587),
}

// tRunner is the outermost frame of a test's goroutine; a go statement's
// goroutine has none (goexit, where a Complete walk ends, is no frame).
var tRunner = []callstack.Frame{fr("testing.tRunner", "testing/testing.go", 1934)}
var goexit []callstack.Frame

func stackOf(complete bool, parts ...[]callstack.Frame) *callstack.Stack {
	s := &callstack.Stack{Complete: complete}
	for _, p := range parts {
		s.Frames = append(s.Frames, p...)
	}
	if !complete {
		s.Stop = "return address not after a call"
	}
	return s
}

func user(frames ...callstack.Frame) []callstack.Frame { return frames }

const blocked = "nettrap: Outbound network blocked: connect 203.0.113.7:443 (external)"

// TestBlameFromStack: the line says where the attempt was made, from the
// caller's stack; when the stack's test code is only another test's (a
// closure named after it), the line names the goroutine, says no
// running test is known to have started it, and names no test as its
// starter (Unowned: the package carries the verdict); without a stack,
// the line is the test's alone.
func TestBlameFromStack(t *testing.T) {
	tests := []struct {
		name     string
		who      Who
		stack    *callstack.Stack
		err      error
		want     string // the line, after blocked
		unowned  bool   // the stack ties the call to no running test
		where    string // file:line of the record's where; "" none
		calledBy string
	}{
		{name: "direct dial in the test", who: Who{Test: "TestFetch"},
			stack: stackOf(true, dial, user(fr("prices.TestFetch", "prices_test.go", 20)), tRunner),
			want:  " during TestFetch at prices/prices_test.go:20 (prices.TestFetch)", where: "prices/prices_test.go:20"},
		{name: "helper two calls deep", who: Who{Test: "TestFetch"},
			stack: stackOf(true, dial, user(fr("prices.fetchQuote", "client.go", 31), fr("prices.fetch", "client.go", 12),
				fr("prices.TestFetch", "prices_test.go", 48)), tRunner),
			want:  " during TestFetch at prices/client.go:31 (prices.fetchQuote, called from prices/prices_test.go:48)",
			where: "prices/client.go:31", calledBy: "prices/prices_test.go:48"},
		{name: "method on a client type", who: Who{Test: "TestClient"},
			stack: stackOf(true, dial, user(fr("prices.(*Client).Get", "client.go", 40), fr("prices.TestClient", "prices_test.go", 60)), tRunner),
			want:  " during TestClient at prices/client.go:40 (prices.(*Client).Get, called from prices/prices_test.go:60)",
			where: "prices/client.go:40", calledBy: "prices/prices_test.go:60"},
		{name: "closure of a subtest", who: Who{Test: "TestTable/eur"},
			stack: stackOf(true, dial, user(fr("prices.fetchQuote", "client.go", 31), fr("prices.TestTable.func1", "prices_test.go", 75)), tRunner),
			want:  " during TestTable/eur at prices/client.go:31 (prices.fetchQuote, called from prices/prices_test.go:75)",
			where: "prices/client.go:31", calledBy: "prices/prices_test.go:75"},
		{name: "goroutine the test started and waited for", who: Who{Test: "TestWait", Active: []string{"TestWait"}},
			stack: stackOf(true, dial, user(fr("prices.fetchQuote", "client.go", 31), fr("prices.TestWait.func1", "prices_test.go", 90)), goexit),
			want:  " during TestWait at prices/client.go:31 (prices.fetchQuote, called from prices/prices_test.go:90 in a goroutine)",
			where: "prices/client.go:31", calledBy: "prices/prices_test.go:90"},
		{name: "goroutine running an ended test's closure: no test is known to have started it", who: Who{Test: "TestB", Active: []string{"TestB"}},
			stack:   stackOf(true, dial, user(fr("prices.fetchQuote", "client.go", 31), fr("prices.TestA.func1", "leak_test.go", 12)), goexit),
			want:    " during TestB at prices/client.go:31 (prices.fetchQuote, called from prices/leak_test.go:12), in a goroutine of prices.TestA.func1 that no running test is known to have started",
			unowned: true, where: "prices/client.go:31", calledBy: "prices/leak_test.go:12"},
		{name: "goroutine running a paused test's closure: its name blames no test", who: Who{Test: "TestB", Active: []string{"TestA", "TestB"}},
			stack:   stackOf(true, dial, user(fr("prices.TestA.func2", "leak_test.go", 14)), goexit),
			want:    " during TestB at prices/leak_test.go:14 (prices.TestA.func2), in a goroutine of prices.TestA.func2 that no running test is known to have started",
			unowned: true, where: "prices/leak_test.go:14"},
		{name: "another test's stored closure, called from the running test's goroutine", who: Who{Test: "TestB", Active: []string{"TestB"}},
			stack: stackOf(true, dial, user(fr("prices.fetchQuote", "client.go", 31), fr("prices.TestA.MakeDialer.func1", "client.go", 70),
				fr("prices.TestB.func1", "b_test.go", 20)), goexit),
			want:  " during TestB at prices/client.go:31 (prices.fetchQuote, called from prices/b_test.go:20 in a goroutine)",
			where: "prices/client.go:31", calledBy: "prices/b_test.go:20"},
		{name: "leftover goroutine dials between tests", who: Who{Test: audit.Collection, Context: policy.Context{Collection: true}},
			stack: stackOf(true, dial, user(fr("prices.TestA.func1", "leak_test.go", 12)), goexit),
			want:  audit.AtCollection + " at prices/leak_test.go:12 (prices.TestA.func1, in a goroutine of prices.TestA.func1)",
			where: "prices/leak_test.go:12"},
		{name: "parallel subtest", who: Who{Candidates: []string{"TestP/a", "TestP/b"}, Active: []string{"TestP", "TestP/a", "TestP/b"}},
			stack: stackOf(true, dial, user(fr("prices.fetchQuote", "client.go", 31), fr("prices.TestP.func1", "prices_test.go", 101)), tRunner),
			want: " during one of TestP/a, TestP/b (ambiguous: parallel tests were running; rerun with -test.parallel=1 to pin it)" +
				" at prices/client.go:31 (prices.fetchQuote, called from prices/prices_test.go:101)",
			where: "prices/client.go:31", calledBy: "prices/prices_test.go:101"},
		{name: "TestMain at collection time", who: Who{Test: audit.Collection, Context: policy.Context{Collection: true}},
			stack: stackOf(true, dial, user(fr("prices.TestMain", "main_test.go", 20), fr("main.main", "_testmain.go", 50),
				fr("runtime.main", "runtime/proc.go", 283)), goexit),
			want: audit.AtCollection + " at prices/main_test.go:20 (prices.TestMain)", where: "prices/main_test.go:20"},
		{name: "shared helper started the goroutine", who: Who{Test: "TestB"},
			stack: stackOf(true, dial, user(fr("prices.poll", "server.go", 50), fr("prices.(*Server).loop", "server.go", 20)), goexit),
			want:  " during TestB at prices/server.go:50 (prices.poll, in a goroutine of prices.(*Server).loop)", where: "prices/server.go:50"},
		{name: "incomplete stack blames no other test", who: Who{Test: "TestB"},
			stack: stackOf(false, dial, user(fr("prices.fetchQuote", "client.go", 31), fr("prices.TestA.func1", "leak_test.go", 12))),
			want:  " during TestB at prices/client.go:31 (prices.fetchQuote, called from prices/leak_test.go:12)",
			where: "prices/client.go:31", calledBy: "prices/leak_test.go:12"},
		{name: "no frame of the module", who: Who{Test: "TestFetch"}, stack: stackOf(false, dial), want: " during TestFetch"},
		{name: "a library's goroutine (net/http's Transport)", who: Who{Test: "TestFetch"},
			stack: stackOf(true, dial, user(fr("net/http.(*Transport).dialConnFor", "net/http/transport.go", 1648),
				fr("net/http.(*Transport).startDialConnForLocked.func1", "net/http/transport.go", 1629)), goexit),
			want: " during TestFetch, in a goroutine of http.(*Transport).startDialConnForLocked.func1"},
		{name: "no stack", who: Who{Test: "TestFetch"}, want: " during TestFetch"},
		{name: "stack unreadable", who: Who{Test: "TestFetch"}, stack: stackOf(true, dial), err: errors.New("thread gone"), want: " during TestFetch"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.who.Package = "example.com/shop/prices"
			var tk decision.Task
			if tt.stack != nil || tt.err != nil {
				tk = stackTask{FixedTask: task(""), stack: tt.stack, err: tt.err}
			}
			r, line := decideOne(t, tt.who, tk)
			if want := blocked + tt.want; line != want {
				t.Errorf("line\n%s\nwant\n%s", line, want)
			}
			if r.Unowned != tt.unowned || r.StartedBy != "" || r.StartedByEnded {
				t.Errorf("unowned %v started_by %q ended %v, want unowned %v and no started_by (a closure's name is no evidence of who started the goroutine)",
					r.Unowned, r.StartedBy, r.StartedByEnded, tt.unowned)
			}
			if got := locOf(r.Where); got != tt.where {
				t.Errorf("where %q, want %q", got, tt.where)
			}
			if got := locOf(r.CalledFrom); got != tt.calledBy {
				t.Errorf("called_from %q, want %q", got, tt.calledBy)
			}
			if tt.stack != nil && tt.err == nil && r.StackStop != tt.stack.Stop {
				t.Errorf("stack_stop %q, want the walk's %q", r.StackStop, tt.stack.Stop)
			}
			if tt.stack != nil && tt.err == nil {
				if len(r.Stack) != len(tt.stack.Frames) || r.Stack[0].Func != "syscall.connect" ||
					r.Stack[len(r.Stack)-1].File != tt.stack.Frames[len(tt.stack.Frames)-1].File {
					t.Errorf("stack %+v, want the %d frames", r.Stack, len(tt.stack.Frames))
				}
			} else if r.Stack != nil || r.Where != nil {
				t.Errorf("record has a stack without one: %+v", r.Origin)
			}
		})
	}
}

// TestBlameMainPackage: in a test binary of a main package the linker
// names the package's functions by its import path; the line, the
// record's where and called_from, its goroutine and its stack name them
// main.F, as Go does in the program, and both files are relative to
// the module's root.
func TestBlameMainPackage(t *testing.T) {
	tab := &callstack.Table{Module: "example.com/shop", MainPackage: "example.com/shop/cmd/tool"}
	tool := func(fn, file string, line int) callstack.Frame {
		return callstack.Frame{Func: "example.com/shop/cmd/tool." + fn, File: shopDir + "cmd/tool/" + file, Line: line}
	}
	for _, tc := range []struct {
		name, want, goroutine string
		stack                 *callstack.Stack
	}{
		{"helper", " during TestPing at cmd/tool/main.go:5 (main.ping, called from cmd/tool/main_test.go:3)", "",
			stackOf(true, dial, user(tool("ping", "main.go", 5), tool("TestPing", "main_test.go", 3)), tRunner)},
		{"goroutine", " during TestPing at cmd/tool/main.go:5 (main.ping, in a goroutine of main.(*pinger).loop)", "main.(*pinger).loop",
			stackOf(true, dial, user(tool("ping", "main.go", 5), tool("(*pinger).loop", "main.go", 9)), goexit)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, policy.Policy{})
			attr := &fakeAttribution{who: Who{Package: "example.com/shop/cmd/tool", Test: "TestPing", Active: []string{"TestPing"}}}
			f.g.Attribution = attr
			c := call(bpf.Connect, inet("203.0.113.7:443"))
			c.Task = stackTask{FixedTask: task(""), stack: tc.stack, tab: tab}
			f.g.Decide(c)
			recs := f.records(t)
			if len(recs) != 1 || len(attr.reports) != 1 {
				t.Fatalf("records %+v, reports %q", recs, attr.reports)
			}
			if _, line, _ := strings.Cut(attr.reports[0], "|TestPing|"); line != blocked+tc.want {
				t.Errorf("line\n%s\nwant\n%s", line, blocked+tc.want)
			}
			r := recs[0]
			if r.Where == nil || r.Where.Func != "main.ping" || r.Goroutine != tc.goroutine {
				t.Errorf("where %+v goroutine %q, want main.ping and %q", r.Where, r.Goroutine, tc.goroutine)
			}
			if r.Stack[len(dial)].Func != "main.ping" || r.Stack[0].Func != "syscall.connect" {
				t.Errorf("stack %+v, want main.ping above net's frames", r.Stack)
			}
		})
	}
}

// TestShownFrames: where the attribution shows stacks (-v, -json), a
// verdict's line is followed by the module's frames, innermost first,
// at most three and then the called-from frame ("..." for those left
// out), files relative to the module's root; never the standard
// library's, and nothing when the frames would only repeat the line's
// where and called from. Without ShowsStack the line is alone.
func TestShownFrames(t *testing.T) {
	sortFrames := user(fr("sort.insertionSort", "sort/zsortfunc.go", 12), fr("sort.Slice", "sort/slice.go", 23))
	tests := []struct {
		name  string
		stack *callstack.Stack
		want  string // after the line
	}{
		{"helper two calls deep", stackOf(true, dial, user(fr("prices.fetchQuote", "client.go", 31), fr("prices.fetch", "client.go", 12),
			fr("prices.TestFetch", "prices_test.go", 48)), tRunner),
			"\nprices/client.go:31 (prices.fetchQuote)\nprices/client.go:12 (prices.fetch)\nprices/prices_test.go:48 (prices.TestFetch)"},
		{"deeper than three", stackOf(true, dial, user(fr("prices.a", "client.go", 1), fr("prices.b", "client.go", 2), fr("prices.c", "client.go", 3),
			fr("prices.d", "client.go", 4), fr("prices.e", "client.go", 5), fr("prices.TestFetch", "prices_test.go", 48)), tRunner),
			"\nprices/client.go:1 (prices.a)\nprices/client.go:2 (prices.b)\nprices/client.go:3 (prices.c)\n...\nprices/prices_test.go:48 (prices.TestFetch)"},
		{"three and the test", stackOf(true, dial, user(fr("prices.a", "client.go", 1), fr("prices.b", "client.go", 2), fr("prices.c", "client.go", 3),
			fr("prices.TestFetch", "prices_test.go", 48)), tRunner),
			"\nprices/client.go:1 (prices.a)\nprices/client.go:2 (prices.b)\nprices/client.go:3 (prices.c)\nprices/prices_test.go:48 (prices.TestFetch)"},
		{"a callback through the standard library", stackOf(true, dial, user(fr("prices.less", "client.go", 7)), sortFrames,
			user(fr("prices.fetchAll", "client.go", 20), fr("prices.TestFetch", "prices_test.go", 48)), tRunner),
			"\nprices/client.go:7 (prices.less)\nprices/client.go:20 (prices.fetchAll)\nprices/prices_test.go:48 (prices.TestFetch)"},
		{"direct dial: the line says it all", stackOf(true, dial, user(fr("prices.TestFetch", "prices_test.go", 20)), tRunner), ""},
		{"a method and its test: the line says it all", stackOf(true, dial, user(fr("prices.(*Client).Get", "client.go", 40),
			fr("prices.TestFetch", "prices_test.go", 60)), tRunner), ""},
		{"a library's goroutine: no frame of the module", stackOf(true, dial, user(fr("net/http.(*Transport).dialConnFor", "net/http/transport.go", 1648)), goexit), ""},
		{"a helper's goroutine", stackOf(true, dial, user(fr("prices.poll", "server.go", 50), fr("prices.(*Server).loop", "server.go", 20)), goexit),
			"\nprices/server.go:50 (prices.poll)\nprices/server.go:20 (prices.(*Server).loop)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, shows := range []bool{true, false} {
				f := newFixture(t, policy.Policy{})
				attr := &fakeAttribution{who: Who{Package: "example.com/shop/prices", Test: "TestFetch", Active: []string{"TestFetch"}, ShowsStack: shows}}
				f.g.Attribution = attr
				c := call(bpf.Connect, inet("203.0.113.7:443"))
				c.Task = stackTask{FixedTask: task(""), stack: tt.stack}
				f.g.Decide(c)
				recs := f.records(t)
				if len(recs) != 1 || len(attr.reports) != 1 {
					t.Fatalf("records %+v, reports %q", recs, attr.reports)
				}
				want := "nettrap: " + audit.Message(recs[0], false, audit.ParallelBinary)
				if shows {
					want += tt.want
				}
				if _, line, _ := strings.Cut(attr.reports[0], "|TestFetch|"); line != want {
					t.Errorf("ShowsStack %v: line\n%s\nwant\n%s", shows, line, want)
				}
				if len(recs[0].Stack) != len(tt.stack.Frames) {
					t.Errorf("the record's stack has %d frames, want all %d", len(recs[0].Stack), len(tt.stack.Frames))
				}
			}
		})
	}
}

func locOf(f *audit.Frame) string {
	if f == nil {
		return ""
	}
	return f.Loc()
}

// decideOne has a guard decide a connect to 203.0.113.7:443 by the caller
// tk, attributed as who, and returns its one record and the line
// reported with it.
func decideOne(t *testing.T, who Who, tk decision.Task) (audit.Record, string) {
	t.Helper()
	f := newFixture(t, policy.Policy{})
	attr := &fakeAttribution{who: who}
	f.g.Attribution = attr
	c := call(bpf.Connect, inet("203.0.113.7:443"))
	if tk != nil {
		c.Task = tk
	}
	f.g.Decide(c)
	recs := f.records(t)
	if len(recs) != 1 || len(attr.reports) != 1 {
		t.Fatalf("records %+v, reports %q", recs, attr.reports)
	}
	_, line, _ := strings.Cut(attr.reports[0], "|"+recs[0].Test+"|")
	return recs[0], line
}

// TestStackOnlyWhenRecorded: the stack is asked for a denied or audited
// call, once however many destinations it names, and never on the
// allowed fast path.
func TestStackOnlyWhenRecorded(t *testing.T) {
	f := newFixture(t, policy.Policy{})
	f.g.Attribution = &fakeAttribution{who: Who{Test: "TestFetch"}}
	asked := &atomic.Int32{}
	stack := stackOf(true, dial, user(fr("prices.TestFetch", "prices_test.go", 20)), tRunner)
	mk := func(dests ...string) *decision.Call {
		c := call(bpf.SendMsg)
		for _, d := range dests {
			c.Dests = append(c.Dests, inet(d))
		}
		c.Task = stackTask{FixedTask: task("udp"), stack: stack, asked: asked}
		return c
	}
	if a := f.g.Decide(mk("127.0.0.1:53", "127.0.0.1:80")); !a.Allowed() || asked.Load() != 0 {
		t.Errorf("loopback: allowed %v, stack asked %d times; want allowed, never", a.Allowed(), asked.Load())
	}
	if a := f.g.Decide(mk("203.0.113.7:443", "198.51.100.1:443")); a.Allowed() || asked.Load() != 1 {
		t.Errorf("two external destinations: allowed %v, stack asked %d times; want denied, once", a.Allowed(), asked.Load())
	}
	f.g.Policy.Mode = policy.Audit
	f.g.Decide(mk("203.0.113.7:443"))
	f.g.Policy.Mode = policy.Enforce
	f.g.Attribution = &fakeAttribution{who: Who{Test: "TestLive", Context: policy.Context{Marked: true}}}
	f.g.Decide(mk("203.0.113.7:443"))
	if asked.Load() != 3 {
		t.Errorf("stack asked %d times in all, want 3 (denied, would-deny, allowed by the marker)", asked.Load())
	}
	for _, r := range f.records(t) {
		if r.Where == nil || r.Where.Loc() != "prices/prices_test.go:20" {
			t.Errorf("%s record: where %+v", r.Decision, r.Where)
		}
	}
}

// TestWouldBlockShownOnce: under --mode=audit a would-be denial's line
// goes to the attribution, and to the messages only when the
// attribution does not show it in the test's output (Who.ShowsAudit).
func TestWouldBlockShownOnce(t *testing.T) {
	for _, shows := range []bool{false, true} {
		f := newFixture(t, policy.Policy{Mode: policy.Audit})
		attr := &fakeAttribution{who: Who{Test: "TestFetch", ShowsAudit: shows}}
		f.g.Attribution = attr
		c := call(bpf.Connect, inet("203.0.113.7:443"))
		c.Task = stackTask{FixedTask: task("tcp"), stack: stackOf(true, dial, user(fr("prices.TestFetch", "prices_test.go", 20)), tRunner)}
		if a := f.g.Decide(c); !a.Allowed() {
			t.Fatal("audit mode denied")
		}
		line := "nettrap: audit: would block: connect tcp 203.0.113.7:443 (external) during TestFetch at prices/prices_test.go:20 (prices.TestFetch)"
		if len(attr.reports) != 1 || attr.reports[0] != "would-deny|TestFetch|"+line {
			t.Errorf("ShowsAudit %v: reports %q, want the line", shows, attr.reports)
		}
		if got, want := f.msgs.String(), map[bool]string{false: line + "\n", true: ""}[shows]; got != want {
			t.Errorf("ShowsAudit %v: messages %q, want %q", shows, got, want)
		}
	}
}

// TestPinnedByTheTestsOwnGoroutine: of tests running in parallel, the
// call is the one's whose goroutine the stack is (testing.tRunner
// called its function, or a func literal written in it, for a
// subtest): the record and the line name that test alone, with no
// "ambiguous". A frame of a test's code anywhere else (a closure run by
// a go statement or by another test's goroutine, an inlined helper's
// literal, the test called by another) pins nothing: the name says
// where code was written, not who runs it.
func TestPinnedByTheTestsOwnGoroutine(t *testing.T) {
	ab := Who{Candidates: []string{"TestA", "TestB"}, Active: []string{"TestA", "TestB"}}
	sub := Who{Candidates: []string{"TestP/a", "TestQ"}, Active: []string{"TestP", "TestP/a", "TestQ"}}
	const ambiguousAB = " during one of TestA, TestB (ambiguous: parallel tests were running; rerun with -test.parallel=1 to pin it)"
	withMarks := func(w Who, marked bool, names ...string) Who {
		w.Marked, w.MarkedCandidates = marked, names
		return w
	}
	tests := []struct {
		name       string
		who        Who
		stack      *callstack.Stack
		test       string   // the record's test
		candidates []string // the record's candidates
		want       string   // the line, after blocked
		verdict    audit.Decision
	}{
		{name: "the test's own frame", who: ab,
			stack: stackOf(true, dial, user(fr("prices.TestA", "prices_test.go", 31)), tRunner),
			test:  "TestA", want: " during TestA at prices/prices_test.go:31 (prices.TestA)"},
		{name: "the other test's own frame, through a helper", who: ab,
			stack: stackOf(true, dial, user(fr("prices.fetchQuote", "client.go", 31), fr("prices.TestB", "prices_test.go", 48)), tRunner),
			test:  "TestB", want: " during TestB at prices/client.go:31 (prices.fetchQuote, called from prices/prices_test.go:48)"},
		{name: "a parallel test's subtest", who: sub,
			stack: stackOf(true, dial, user(fr("prices.fetchQuote", "client.go", 31), fr("prices.TestP.func1", "prices_test.go", 75)), tRunner),
			test:  "TestP/a", want: " during TestP/a at prices/client.go:31 (prices.fetchQuote, called from prices/prices_test.go:75)"},
		{name: "a subtest's nested literal", who: sub,
			stack: stackOf(true, dial, user(fr("prices.TestP.func1.2", "prices_test.go", 77)), tRunner),
			test:  "TestP/a", want: " during TestP/a at prices/prices_test.go:77 (prices.TestP.func1.2)"},
		{name: "the parent's own goroutine while its subtest runs", who: sub,
			stack: stackOf(true, dial, user(fr("prices.TestP", "prices_test.go", 70)), tRunner),
			test:  "TestP", want: " during TestP at prices/prices_test.go:70 (prices.TestP)"},
		{name: "two subtests of the test: narrowed, not pinned",
			who:        Who{Candidates: []string{"TestP/a", "TestP/b", "TestQ"}},
			stack:      stackOf(true, dial, user(fr("prices.TestP.func1", "prices_test.go", 75)), tRunner),
			candidates: []string{"TestP/a", "TestP/b"},
			want: " during one of TestP/a, TestP/b (ambiguous: parallel tests were running; rerun with -test.parallel=1 to pin it)" +
				" at prices/prices_test.go:75 (prices.TestP.func1)"},
		{name: "TestA called by TestB's goroutine", who: ab,
			stack: stackOf(true, dial, user(fr("prices.TestA", "prices_test.go", 31), fr("prices.TestB", "prices_test.go", 52)), tRunner),
			test:  "TestB", want: " during TestB at prices/prices_test.go:31 (prices.TestA, called from prices/prices_test.go:52)"},
		{name: "a goroutine running the test's closure", who: ab,
			stack:      stackOf(true, dial, user(fr("prices.TestA.func1", "prices_test.go", 33)), goexit),
			candidates: ab.Candidates, want: ambiguousAB + " at prices/prices_test.go:33 (prices.TestA.func1, in a goroutine of prices.TestA.func1)"},
		{name: "an inlined helper's literal as a subtest's function", who: ab,
			stack:      stackOf(true, dial, user(fr("prices.TestA.MakeDialer.func1", "dialer.go", 12)), tRunner),
			candidates: ab.Candidates, want: ambiguousAB + " at prices/dialer.go:12 (prices.TestA.MakeDialer.func1)"},
		{name: "a go statement's wrapper", who: ab,
			stack:      stackOf(true, dial, user(fr("prices.fetchQuote", "client.go", 31), fr("prices.TestA.gowrap1", "prices_test.go", 35)), tRunner),
			candidates: ab.Candidates, want: ambiguousAB + " at prices/client.go:31 (prices.fetchQuote, called from prices/prices_test.go:35)"},
		{name: "incomplete stack", who: ab,
			stack:      stackOf(false, dial, user(fr("prices.TestA", "prices_test.go", 31))),
			candidates: ab.Candidates, want: ambiguousAB + " at prices/prices_test.go:31 (prices.TestA)"},
		{name: "no test of the module", who: ab,
			stack:      stackOf(true, dial, user(fr("other.org/lib.TestA", "/go/pkg/mod/other.org/lib/lib_test.go", 9)), tRunner),
			candidates: ab.Candidates, want: ambiguousAB},
		{name: "the pinned test alone marked: not pinned (decided as ambiguous)", who: withMarks(ab, false, "TestA"),
			stack:      stackOf(true, dial, user(fr("prices.TestA", "prices_test.go", 31)), tRunner),
			candidates: ab.Candidates, want: ambiguousAB + " at prices/prices_test.go:31 (prices.TestA)"},
		{name: "every candidate marked: allowed, pinned", who: withMarks(ab, true, "TestA", "TestB"),
			stack: stackOf(true, dial, user(fr("prices.TestB", "prices_test.go", 48)), tRunner),
			test:  "TestB", verdict: audit.Allowed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.who.Package = "example.com/shop/prices"
			r, line := decideOne(t, tt.who, stackTask{FixedTask: task(""), stack: tt.stack})
			if r.Test != tt.test || !slices.Equal(r.Candidates, tt.candidates) {
				t.Errorf("test %q candidates %q, want %q %q", r.Test, r.Candidates, tt.test, tt.candidates)
			}
			verdict := tt.verdict
			if verdict == "" {
				verdict = audit.Denied
			}
			if r.Decision != verdict {
				t.Fatalf("decision %s, want %s", r.Decision, verdict)
			}
			if verdict != audit.Denied {
				return
			}
			if want := blocked + tt.want; line != want {
				t.Errorf("line\n%s\nwant\n%s", line, want)
			}
		})
	}
}
