package guard

import (
	"slices"
	"testing"

	"github.com/nettrap/nettrap/ancestry"
	"github.com/nettrap/nettrap/audit"
	"github.com/nettrap/nettrap/bpf"
	"github.com/nettrap/nettrap/callstack"
	"github.com/nettrap/nettrap/policy"
)

// chainTask is a caller whose stack and chain of creators can be read
// (decision.ChainReader), built by hand.
type chainTask struct {
	stackTask
	chain *ancestry.Chain
}

func (t chainTask) Chain() (*ancestry.Chain, error) { return t.chain, nil }

// creator is a live creator whose stack is frames.
func creator(id uint64, s *callstack.Stack) ancestry.Creator {
	return ancestry.Creator{ID: id, Stack: s}
}

// goStmt is a go statement in function fn.
func goStmt(fn string) callstack.Frame { return callstack.Frame{Func: fn, File: "x.go", Line: 1} }

// TestBlameByChain: where the calling goroutine is no test's own, the
// nearest creator that is decides: a running test's (the call is its,
// pinned among parallel tests), a test that had ended (the package
// fails naming it, the running test passes), none (no running test is
// known to have started it: the package carries the verdict, whatever
// test happened to run). A goroutine without a frame of the module is
// placed where its creator's code is.
func TestBlameByChain(t *testing.T) {
	library := stackOf(true, dial, user(fr("up.(*Probe).Do.func1", "up/probe.go", 40)), goexit)
	parallelDial := stackOf(true, dial, user(fr("net.(*sysDialer).dialParallel.func1", "net/dial.go", 590)), goexit)
	testB := stackOf(true, user(fr("net.(*sysDialer).dialParallel", "net/dial.go", 600), fr("prices.TestB", "prices_test.go", 31)), tRunner)
	testA := stackOf(true, user(fr("up.(*Probe).Start", "up/probe.go", 10), fr("prices.TestA", "prices_test.go", 12)), tRunner)
	libLoop := stackOf(true, user(fr("up.(*Probe).loop", "up/probe.go", 30)), goexit)
	mainG := stackOf(true, user(fr("prices.init.0", "init.go", 5), fr("runtime.main", "runtime/proc.go", 283)), goexit)
	closure := stackOf(true, dial, user(fr("prices.TestA.func1", "leak_test.go", 12)), goexit)
	ab := Who{Candidates: []string{"TestA", "TestB"}, Active: []string{"TestA", "TestB"}}
	tests := []struct {
		name       string
		who        Who
		stack      *callstack.Stack
		chain      *ancestry.Chain
		test       string
		candidates []string
		startedBy  string
		ended      bool
		unowned    bool
		want       string // after blocked
	}{
		{name: "net's parallel dialer: the running test's own call site", who: Who{Test: "TestB", Active: []string{"TestB"}},
			stack: parallelDial, chain: &ancestry.Chain{GoStatement: goStmt("net.(*sysDialer).dialParallel"), Creators: []ancestry.Creator{creator(7, testB)}},
			test: "TestB", want: " during TestB at prices/prices_test.go:31 (prices.TestB), in a goroutine of net.(*sysDialer).dialParallel.func1 started there"},
		{name: "parallel tests: pinned by the creator", who: ab,
			stack: parallelDial, chain: &ancestry.Chain{GoStatement: goStmt("net.(*sysDialer).dialParallel"), Creators: []ancestry.Creator{creator(7, testB)}},
			test: "TestB", want: " during TestB at prices/prices_test.go:31 (prices.TestB), in a goroutine of net.(*sysDialer).dialParallel.func1 started there"},
		{name: "two creators deep, a test that had ended", who: Who{Test: "TestC", Active: []string{"TestC"}},
			stack: library, chain: &ancestry.Chain{Creators: []ancestry.Creator{creator(9, libLoop), {ID: 5, Stack: testA, Saved: true}}},
			test: "TestC", startedBy: "TestA", ended: true,
			want: " during TestC at prices/prices_test.go:12 (prices.TestA), in a goroutine of up.(*Probe).Do.func1 started there, from a goroutine started by TestA, which had ended"},
		{name: "a closure of TestA in a goroutine TestB started", who: Who{Test: "TestB", Active: []string{"TestB"}},
			stack: closure, chain: &ancestry.Chain{Creators: []ancestry.Creator{creator(7, testB)}},
			test: "TestB", want: " during TestB at prices/leak_test.go:12 (prices.TestA.func1, in a goroutine of prices.TestA.func1)"},
		{name: "a worker started in init: no test", who: Who{Test: "TestB", Active: []string{"TestB"}},
			stack: library, chain: &ancestry.Chain{GoStatement: goStmt("up.(*Probe).Do"), Creators: []ancestry.Creator{{ID: 1, Stack: mainG, GoStatement: callstack.Frame{}}}},
			test: "TestB", unowned: true,
			want: " during TestB, in a goroutine of up.(*Probe).Do.func1 (started in up.(*Probe).Do) that no running test is known to have started"},
		{name: "a live creator that moved on places nothing", who: Who{Test: "TestB", Active: []string{"TestB"}},
			stack: parallelDial, chain: &ancestry.Chain{GoStatement: goStmt("net.(*sysDialer).dialParallel"), Creators: []ancestry.Creator{creator(7, stackOf(true, user(fr("prices.TestB", "prices_test.go", 40)), tRunner))}},
			test: "TestB", want: " during TestB, in a goroutine of net.(*sysDialer).dialParallel.func1"},
		{name: "creators exited unseen", who: Who{Test: "TestB", Active: []string{"TestB"}},
			stack: library, chain: &ancestry.Chain{GoStatement: goStmt("up.(*Probe).Do"), End: "goroutine 5 has exited"},
			test: "TestB", unowned: true,
			want: " during TestB, in a goroutine of up.(*Probe).Do.func1 (started in up.(*Probe).Do) that no running test is known to have started"},
		{name: "a creator running on another thread is skipped", who: Who{Test: "TestB", Active: []string{"TestB"}},
			stack: parallelDial, chain: &ancestry.Chain{Creators: []ancestry.Creator{{ID: 8, GoStatement: goStmt("net.(*sysDialer).dialParallel")}, creator(7, testB)}},
			test: "TestB", want: " during TestB at prices/prices_test.go:31 (prices.TestB), in a goroutine of net.(*sysDialer).dialParallel.func1 started there"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.who.Package = "example.com/shop/prices"
			tt.who.BinaryPID = callerPID
			r, line := decideOne(t, tt.who, chainTask{stackTask{FixedTask: task(""), stack: tt.stack}, tt.chain})
			if r.Test != tt.test || !slices.Equal(r.Candidates, tt.candidates) {
				t.Errorf("test %q candidates %q, want %q %q", r.Test, r.Candidates, tt.test, tt.candidates)
			}
			if r.StartedBy != tt.startedBy || r.StartedByEnded != tt.ended || r.Unowned != tt.unowned {
				t.Errorf("started_by %q ended %v unowned %v, want %q %v %v", r.StartedBy, r.StartedByEnded, r.Unowned, tt.startedBy, tt.ended, tt.unowned)
			}
			if want := blocked + tt.want; line != want {
				t.Errorf("line\n%s\nwant\n%s", line, want)
			}
		})
	}
}

// TestChainNotReadOutsideTests: at collection time, outside Go tests,
// and in a process the test binary started (its own goroutines' tests
// are not the stream's), the chain is not asked for.
func TestChainNotReadOutsideTests(t *testing.T) {
	for _, who := range []Who{
		{Test: audit.Collection, Context: policy.Context{Collection: true}, BinaryPID: callerPID},
		{BinaryPID: callerPID},
		{Test: "TestSubprocess", BinaryPID: callerPID + 1},
		{Test: "TestSubprocess"},
	} {
		f := newFixture(t, policy.Policy{})
		who.Package = "example.com/shop/prices"
		attr := &fakeAttribution{who: who}
		f.g.Attribution = attr
		c := call(bpf.Connect, inet("203.0.113.7:443"))
		lib := stackOf(true, dial, user(fr("up.(*Probe).Do.func1", "up/probe.go", 40)), goexit)
		c.Task = chainTask{stackTask{FixedTask: task(""), stack: lib}, &ancestry.Chain{End: "goroutine 5 has exited"}}
		f.g.Decide(c)
		if recs := f.records(t); len(recs) != 1 || recs[0].Unowned {
			t.Errorf("%+v: records %+v, want one, not unowned", who, recs)
		}
	}
}
