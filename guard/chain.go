package guard

import (
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
// the pin among who's candidates (as pinned does):
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
	chain := decision.ChainOf(c.Task)
	if chain == nil {
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
// it is now: its outermost frames do not change while it lives.
func chainOwner(chain *ancestry.Chain, tab *callstack.Table) (string, bool, ancestry.Creator) {
	for i, cr := range chain.Creators {
		if test, literal := ownTest(cr.Stack, tab); test != "" {
			if !atCreation(chain, i) {
				cr.Stack = nil
			}
			return test, literal, cr
		}
	}
	return "", false, ancestry.Creator{}
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
