package guard

import (
	"errors"
	"os"
	"slices"
	"testing"

	"github.com/nettrap/nettrap/ancestry"
	"github.com/nettrap/nettrap/audit"
	"github.com/nettrap/nettrap/bpf"
	"github.com/nettrap/nettrap/callstack"
	"github.com/nettrap/nettrap/decision"
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

// heldTask is a caller whose stack cannot be read, as pending or not,
// of process pid (its thread the same).
type heldTask struct {
	stackTask
	pid     int
	pending bool
	gone    bool
}

func (t heldTask) Caller() decision.Caller {
	return decision.Caller{PID: t.pid, TID: t.pid, Gone: t.gone, Argv0: "p.test"}
}
func (t heldTask) Pending() bool { return t.pending }

// TestNoEvidenceBlamesNoTest: a call of the test binary's whose stack or
// creators cannot be read blames no test by timing. Its caller exited as
// it made the call: the package fails (unowned). Its caller left the
// call, alive (a signal: the kernel makes it again, and that call is
// judged): the record fails nothing (left_the_call). A caller still in
// the call, alive, whose memory could not be read, and a process the
// binary started keep the running test. A test's goroutine nettrap
// cannot name (a suite's runner calls the test) is a running test's.
func TestNoEvidenceBlamesNoTest(t *testing.T) {
	self := os.Getpid()
	unreadable := stackTask{FixedTask: task(""), err: errors.New("callstack: /proc/TID/syscall: the thread is running")}
	runner := stackOf(true, dial, user(fr("grpctest.RunSubTests.func1", "grpctest/grpctest.go", 80)), tRunner)
	who := Who{Package: "example.com/shop/prices", Test: "TestB", Active: []string{"TestB"}, BinaryPID: self}
	tests := []struct {
		name          string
		tk            decision.Task
		unowned, left bool
		want          string
	}{
		{name: "the caller exited as it made the call", tk: heldTask{unreadable, self, false, true}, unowned: true,
			want: ", whose stack nettrap could not read (the caller left the call, or exited as it made it): no running test is known to have made it"},
		{name: "the caller left the call, alive", tk: heldTask{unreadable, self, false, false}, left: true},
		{name: "a process the binary started", tk: heldTask{unreadable, self + 1, true, false}},
		{name: "still in the call, memory unreadable", tk: heldTask{unreadable, self, true, false}},
		{name: "the chain could not be read", unowned: true,
			tk:   chainErrTask{stackTask{FixedTask: task(""), stack: stackOf(true, dial, user(fr("up.(*Probe).Do.func1", "up/probe.go", 40)), goexit)}, self},
			want: ", in a goroutine of up.(*Probe).Do.func1 that no running test is known to have started"},
		{name: "an unnamed test goroutine", tk: stackTask{FixedTask: task(""), stack: runner}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := who
			if tt.tk == nil {
				t.Fatal("no task")
			}
			r, line := decideOne(t, w, tt.tk)
			if r.Unowned != tt.unowned || r.Left != tt.left || r.Test != "TestB" {
				t.Errorf("unowned %v left %v test %q, want %v %v TestB", r.Unowned, r.Left, r.Test, tt.unowned, tt.left)
			}
			if tt.want != "" && line != blocked+" during TestB"+tt.want {
				t.Errorf("line\n%s\nwant\n%s", line, blocked+" during TestB"+tt.want)
			}
		})
	}
}

// chainErrTask reads a stack, and fails to read the chain (the process
// exited), as process pid.
type chainErrTask struct {
	stackTask
	pid int
}

func (t chainErrTask) Caller() decision.Caller {
	return decision.Caller{PID: t.pid, TID: t.pid, Gone: true}
}
func (t chainErrTask) Chain() (*ancestry.Chain, error) {
	return nil, errors.New("open /proc/1/syscall: no such file or directory")
}

// TestChainUnnamedTestGoroutine: a creator that is a test's goroutine
// nettrap cannot name ends the chain: still there, the call is the
// running test's (a parent's at most); exited, no running test is known
// to have started it.
func TestChainUnnamedTestGoroutine(t *testing.T) {
	lib := stackOf(true, dial, user(fr("up.(*Probe).Do.func1", "up/probe.go", 40)), goexit)
	runner := stackOf(true, user(fr("grpctest.RunSubTests.func1", "grpctest/grpctest.go", 80)), tRunner)
	top := stackOf(true, user(fr("prices.TestA", "prices_test.go", 10)), tRunner)
	who := Who{Package: "example.com/shop/prices", Test: "TestA/sub", Active: []string{"TestA", "TestA/sub"}, BinaryPID: callerPID}
	for _, tc := range []struct {
		live    bool
		unowned bool
	}{{true, false}, {false, true}} {
		chain := &ancestry.Chain{Creators: []ancestry.Creator{{ID: 9, Stack: runner, Saved: true, Live: tc.live}, {ID: 5, Stack: top, Live: true}}}
		r, _ := decideOne(t, who, chainTask{stackTask{FixedTask: task(""), stack: lib}, chain})
		if r.Unowned != tc.unowned || r.StartedBy != "" || r.Test != "TestA/sub" {
			t.Errorf("live %v: unowned %v started_by %q test %q, want unowned %v, no started_by (not TestA, the chain's next), TestA/sub",
				tc.live, r.Unowned, r.StartedBy, r.Test, tc.unowned)
		}
	}
}
