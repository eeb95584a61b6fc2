package guard

import (
	"errors"
	"strings"

	"github.com/nettrap/nettrap/ancestry"
	"github.com/nettrap/nettrap/audit"
	"github.com/nettrap/nettrap/callstack"
	"github.com/nettrap/nettrap/decision"
)

// byChain ties a call whose goroutine is no test's own to the test whose
// goroutine started it, through the goroutines that created the caller's
// (package ancestry): the nearest creator that is a test's own goroutine
// (ownTest) is the evidence. It words what it found into o and returns
// the pin among who's candidates (pinTo):
//
//   - a running test started it: the call is that test's (o.Unowned,
//     set by a closure's name, is cleared);
//   - a test that is not running started it: o.StartedBy names it (the
//     verdict goes to it, or to the package once it has ended);
//   - the chain reaches no test's goroutine (a worker started in init or
//     TestMain, a library's goroutine whose creators exited unseen): no
//     running test is known to have started it, o.Unowned, and the
//     package carries the verdict. Never the test that happened to run.
//
// A goroutine with no frame of the module takes its location from the
// nearest creator that has one (o.WhereStarted): the test's own line for
// a dial net's parallel dialer makes in a goroutine of its own.
//
// Only the test binary's own goroutines are read (Who.BinaryPID: not a
// tool a test runs, nor the binary re-executed), during a test (not
// collection time), and only where the chain can be read: otherwise o
// stays what the stack said.
func byChain(c *decision.Call, tab *callstack.Table, who Who, o *audit.Origin) []string {
	if !inTests(who) || who.Collection || tab.MainPackage != "" || who.BinaryPID <= 0 || c.Task.Caller().PID != who.BinaryPID {
		return nil
	}
	chain, err := decision.ChainOf(c.Task)
	if errors.Is(err, ancestry.ErrUnsupported) {
		return nil
	}
	if err != nil {
		// The chain of a program that has them could not be read this
		// time: no evidence, so no test is blamed.
		o.ChainStop = err.Error()
		noEvidence(c, o, "the caller's creators could not be read")
		return nil
	}
	if o.Where == nil {
		if s := nearestUserStack(chain, tab); s != nil {
			w, _ := tab.Where(s)
			o.Where, o.WhereStarted = relFrame(tab, w.Frame, w.RelFile), true
			if _, f, ok := testFrame(s, tab); ok && f != w.Frame {
				o.CalledFrom = relFrame(tab, f, relFile(tab, f))
			}
		}
	}
	test, literal, by := chainOwner(chain, tab)
	if test == "" && by.Live && !pausedInParallel(by.Stack) {
		// A test's goroutine whose test function nettrap cannot name
		// (a suite's runner calls it: grpctest.RunSubTests.func1), still
		// there and not paused: the running test's or one of its
		// parents', as the running test's own goroutine is.
		o.Unowned = false
		return nil
	}
	if test == "" {
		o.Unowned = true
		o.CreatedIn = createdIn(chain)
		return nil
	}
	o.Unowned = false
	if running(who, test) {
		return pinTo(test, literal, who)
	}
	o.StartedBy, o.StartedByEnded = test, !active(who, test)
	if by.Stack != nil {
		// The test's own line that led to the go statement.
		if _, f, ok := testFrame(by.Stack, tab); ok {
			o.CalledFrom = relFrame(tab, f, relFile(tab, f))
		}
	}
	return nil
}

// chainOwner finds the nearest creator in chain that is a test's own
// goroutine: the test, whether a literal of it ran there (a subtest),
// and the creator, its stack kept only where it shows the go statement
// (atCreation). Whose goroutine a creator is does not depend on where
// it is now: its outermost frames do not change while it lives. A
// test's goroutine whose test nettrap cannot name (testGoroutine, not
// ownTest) ends the search too, with "" and that creator: the chain
// above it is its parent tests', not the caller's.
func chainOwner(chain *ancestry.Chain, tab *callstack.Table) (string, bool, ancestry.Creator) {
	for i, cr := range chain.Creators {
		test, literal := ownTest(cr.Stack, tab)
		if test == "" && !testGoroutine(cr.Stack, tab) {
			continue
		}
		if test != "" && !atCreation(chain, i) {
			cr.Stack = nil
		}
		return test, literal, cr
	}
	return "", false, ancestry.Creator{}
}

// testGoroutine tells whether s is a goroutine the testing package runs
// a test in (testing.tRunner its outermost frame), named or not.
func testGoroutine(s *callstack.Stack, tab *callstack.Table) bool {
	if s == nil || !s.Complete {
		return false
	}
	w, _ := tab.Where(s)
	return w.EntryIsTest
}

// pausedInParallel tells whether a test's goroutine is paused in
// t.Parallel (waiting for the sequential tests to end): not running.
func pausedInParallel(s *callstack.Stack) bool {
	if s == nil {
		return false
	}
	for _, f := range s.Frames {
		if f.Func == "testing.(*T).Parallel" {
			return true
		}
	}
	return false
}

// nearestUserStack is the stack of the nearest creator that shows where
// it started the next goroutine (atCreation) and has a frame of the
// module; nil when none has.
func nearestUserStack(chain *ancestry.Chain, tab *callstack.Table) *callstack.Stack {
	for i, cr := range chain.Creators {
		if cr.Stack == nil || !atCreation(chain, i) {
			continue
		}
		if _, ok := tab.Where(cr.Stack); ok {
			return cr.Stack
		}
	}
	return nil
}

// atCreation tells whether creator i's stack shows it where it ran the
// go statement that started the next goroutine of the chain: kept at
// that moment (Saved), or live and still in the function that holds the
// statement (net's dialParallel waiting for the dialer it started), so
// that the frames below are the ones it had then. A live creator that
// has moved on (the main goroutine past init) says nothing of where it
// was.
func atCreation(chain *ancestry.Chain, i int) bool {
	cr := chain.Creators[i]
	if cr.Saved {
		return true
	}
	stmt := chain.GoStatement
	if i > 0 {
		stmt = chain.Creators[i-1].GoStatement
	}
	if stmt.Func == "" || cr.Stack == nil {
		return false
	}
	for _, f := range cr.Stack.Frames {
		if f.Func == stmt.Func {
			return true
		}
	}
	return false
}

// createdIn names the functions whose go statements started the caller's
// goroutine and its creators, nearest first, as far as they are known.
func createdIn(chain *ancestry.Chain) []string {
	var in []string
	for _, f := range append([]callstack.Frame{chain.GoStatement}, goStatements(chain)...) {
		if f.Func == "" {
			break
		}
		in = append(in, f.Func)
	}
	return in
}

func goStatements(chain *ancestry.Chain) []callstack.Frame {
	fs := make([]callstack.Frame, 0, len(chain.Creators))
	for _, cr := range chain.Creators {
		fs = append(fs, cr.GoStatement)
	}
	return fs
}

// active tells whether test (a top-level test) or a subtest of it has
// started and not ended, as the stream told.
func active(who Who, test string) bool {
	for _, name := range who.Active {
		if name == test || strings.HasPrefix(name, test+"/") {
			return true
		}
	}
	return false
}
