package guard

import (
	"strings"

	"github.com/nettrap/nettrap/audit"
	"github.com/nettrap/nettrap/callstack"
	"github.com/nettrap/nettrap/decision"
)

// The caller's stack, read for a denied or audited attempt only (never
// on the allowed fast path), once per call, while the call waits: where
// in the user's code the call was made, and whose goroutine made it.
// Blame rests on what the stack shows, never on timing: a goroutine
// whose code is another test's (its closure, or a frame of its own
// code) is that test's, and the verdict goes to it.

// readOrigin asks the call's task for its stack and words what it
// shows: the zero Origin when the task cannot tell.
func readOrigin(c *decision.Call, who Who) audit.Origin {
	if c.Task == nil {
		return audit.Origin{}
	}
	s, tab := decision.StackOf(c.Task)
	if s == nil {
		return audit.Origin{}
	}
	return stackOrigin(s, tab, who)
}

// stackOrigin is what stack s (symbolized by tab) tells of a call who
// names.
func stackOrigin(s *callstack.Stack, tab *callstack.Table, who Who) audit.Origin {
	o := audit.Origin{Stack: make([]audit.Frame, 0, len(s.Frames)), StackStop: s.Stop}
	for _, f := range s.Frames {
		o.Stack = append(o.Stack, audit.Frame{Func: f.Func, File: f.File, Line: f.Line})
	}
	w, ok := tab.Where(s)
	if w.Entry != "" && !w.EntryIsTest && w.Entry != "main.main" {
		o.Goroutine = w.Entry
	}
	if !ok {
		// No frame of the module: a goroutine a library started (net/http
		// dials in its Transport's), which the stack ties to no test.
		// The line names its entry and no more.
		return o
	}
	o.Where = relFrame(w.Frame, w.RelFile)
	test, tf, found := testFrame(s, tab)
	if found && (tf.Func != w.Frame.Func || tf.Line != w.Frame.Line || tf.File != w.Frame.File) {
		o.CalledFrom = relFrame(tf, relFile(tab, tf))
	}
	if test != "" && s.Complete && inTests(who) && !running(who, test) {
		o.StartedBy = test
		o.StartedByEnded = !active(who.Active, test)
	}
	return o
}

// relFrame is f with its file relative to the module's root (rel), or
// its base name when that cannot be told.
func relFrame(f callstack.Frame, rel string) *audit.Frame {
	if rel == "" {
		rel = f.File[strings.LastIndexByte(f.File, '/')+1:]
	}
	return &audit.Frame{Func: f.Func, File: rel, Line: f.Line}
}

// relFile is f's file relative to the module's root, "" if unknown.
func relFile(tab *callstack.Table, f callstack.Frame) string {
	w, ok := tab.Where(&callstack.Stack{Frames: []callstack.Frame{f}})
	if !ok {
		return ""
	}
	return w.RelFile
}

// testFrame finds the outermost frame of a test function's code in the
// user's module (the test, or a closure in it: TestA, TestA.func1.2),
// and names the test (TestA). The outermost, because that is whose
// goroutine it is: a test's goroutine may call a closure another test
// made, not the other way round.
func testFrame(s *callstack.Stack, tab *callstack.Table) (string, callstack.Frame, bool) {
	for i := len(s.Frames) - 1; i >= 0; i-- {
		f := s.Frames[i]
		if f.Func == "" || f.Line == 0 {
			continue
		}
		name := TestOfFunc(f.Func)
		if name == "" || !isUserFrame(tab, f) {
			continue
		}
		return name, f, true
	}
	return "", callstack.Frame{}, false
}

// isUserFrame tells whether f is in the table's main module.
func isUserFrame(tab *callstack.Table, f callstack.Frame) bool {
	_, ok := tab.Where(&callstack.Stack{Frames: []callstack.Frame{f}})
	return ok
}

// TestOfFunc names the test function a function belongs to:
// "TestA" for "example.com/m/p.TestA", "example.com/m/p_test.TestA.func1"
// or "p.TestA.func1.gowrap2"; "" for anything else, TestMain included
// (its calls are collection time).
func TestOfFunc(fn string) string {
	short := audit.Frame{Func: fn}.ShortFunc()
	_, rest, ok := strings.Cut(short, ".")
	if !ok {
		return ""
	}
	top, _, _ := strings.Cut(rest, ".")
	if !strings.HasPrefix(top, "Test") || top == "TestMain" {
		return ""
	}
	if len(top) > 4 {
		if c := top[4]; c >= 'a' && c <= 'z' {
			return "" // Testify is not a test (go test's rule)
		}
	}
	return top
}

// inTests tells whether who names Go tests (a test, candidates, or
// collection time), as opposed to a process of any command.
func inTests(who Who) bool {
	return who.Test != "" || len(who.Candidates) > 0
}

// running tells whether test (a top-level test's name) is the one who
// names as running, or one of the candidates, or a parent of them.
func running(who Who, test string) bool {
	for _, name := range append([]string{who.Test}, who.Candidates...) {
		if name == test || strings.HasPrefix(name, test+"/") {
			return true
		}
	}
	return false
}

// active tells whether test, or a subtest of it, had started and not
// ended (from the stream, Who.Active).
func active(names []string, test string) bool {
	for _, name := range names {
		if name == test || strings.HasPrefix(name, test+"/") {
			return true
		}
	}
	return false
}
