package guard

import (
	"slices"
	"strings"

	"github.com/nettrap/nettrap/audit"
	"github.com/nettrap/nettrap/callstack"
	"github.com/nettrap/nettrap/decision"
	"github.com/nettrap/nettrap/procfs"
)

// The caller's stack, read for a denied or audited attempt only (never
// on the allowed fast path), once per call, while the call waits: where
// in the user's code the call was made, and whose goroutine made it.
// A running test's own goroutine pins the call to it (ownTest, pinTo). A
// goroutine whose code is another test's by name only (TestA.func1
// during TestB) is no evidence of who started it: a function's name
// says where its code was written, and TestA may have stored the
// closure for TestB to call. The line then names the goroutine and
// says no running test is known to have started it, and the package
// carries the verdict (audit.Origin.Unowned), rather than TestA by its
// name or TestB by timing.

// stackRead is what the caller's stack told of a call.
type stackRead struct {
	origin audit.Origin // the record's; zero: not read
	// shown are the module's frames a verdict's line shows under it
	// when the attribution shows stacks (Who.ShowsStack): shownFrames.
	shown []audit.Frame
	pin   []string // the candidates the stack pins the call to (pinTo)
}

// readOrigin asks the call's task for its stack and words what it
// shows: the zero stackRead when the task cannot tell.
func readOrigin(c *decision.Call, who Who) stackRead {
	if c.Task == nil {
		return stackRead{}
	}
	s, tab := decision.StackOf(c.Task)
	if _, reads := c.Task.(decision.StackReader); s == nil && reads {
		return stackRead{origin: unreadOrigin(c, who)}
	}
	if s == nil {
		return stackRead{}
	}
	o := stackOrigin(s, tab, who)
	var pin []string
	switch test, literal := ownTest(s, tab); {
	case test != "":
		pin = pinTo(test, literal, who)
	case testGoroutine(s, tab):
		// A test's own goroutine whose test nettrap cannot name (a
		// suite's runner calls it): running code, so a running
		// test's; among parallel tests, any of them.
		o.Unowned = false
	default:
		pin = byChain(c, tab, who, &o)
	}
	return stackRead{origin: o, shown: shownFrames(s, tab, o), pin: pin}
}

// maxShown is how many of the module's innermost frames a line shows
// under it, before the called-from frame.
const maxShown = 3

// shownFrames are the frames a verdict's line shows under it (with -v or
// -json): the module's own, innermost first, at most maxShown of them,
// then the called-from frame, a zero Frame standing for the module's
// frames left out between them; files relative to the module's root.
// The standard library's frames (some 18 of a dial's 22: the syscall
// plumbing) are left to the audit record's stack. nil when the frames
// would add nothing to the line, which names where and called from
// already.
func shownFrames(s *callstack.Stack, tab *callstack.Table, o audit.Origin) []audit.Frame {
	if o.Where == nil {
		return nil
	}
	var shown []audit.Frame
	skipped := false
	for _, f := range s.Frames {
		if f.Func == "" || f.Line == 0 || !isUserFrame(tab, f) {
			continue
		}
		rf := *relFrame(tab, f, relFile(tab, f))
		switch {
		case o.CalledFrom != nil && rf == *o.CalledFrom:
			if skipped {
				shown = append(shown, audit.Frame{})
			}
			return addsToLine(append(shown, rf), o)
		case len(shown) < maxShown:
			shown = append(shown, rf)
		default:
			skipped = true
		}
	}
	return addsToLine(shown, o)
}

// addsToLine is frames, or nil when they are only the line's where and
// called-from frames.
func addsToLine(frames []audit.Frame, o audit.Origin) []audit.Frame {
	for _, f := range frames {
		if f != *o.Where && (o.CalledFrom == nil || f != *o.CalledFrom) {
			return frames
		}
	}
	return nil
}

// unreadOrigin is the origin of a call whose stack could not be read:
// none, unless the call was the test binary's (or its maker is gone
// before it could be looked at: it exited as it made the call) during a
// test, where the evidence would have named the test. With none, no test
// is blamed by timing: the call is Unowned, and the package fails.
func unreadOrigin(c *decision.Call, who Who) audit.Origin {
	if !inTests(who) || who.Collection || who.BinaryPID <= 0 {
		return audit.Origin{}
	}
	if caller := c.Task.Caller(); !caller.Gone && caller.PID != who.BinaryPID {
		return audit.Origin{} // a process the binary started: by process
	}
	var o audit.Origin
	noEvidence(c, &o, "the caller's stack could not be read")
	return o
}

// noEvidence words a call of the test binary's whose evidence could not
// be read (why): a caller whose thread or process exited as it made the
// call is Unowned, and the package fails (nothing is lost, and no test
// is blamed by timing); one that left the call while alive (a signal
// interrupted it: the kernel makes the call again, and that one is
// judged) is Left, and fails nothing. A caller still in the call whose
// memory could not be read for another reason keeps the running test,
// as a call with no stack did before.
func noEvidence(c *decision.Call, o *audit.Origin, why string) {
	caller := c.Task.Caller()
	alive := !caller.Gone && procfs.Lives(caller.TID) && procfs.Lives(caller.PID)
	switch {
	case !alive:
		o.Unowned = true
		o.StackStop = why + ": the caller exited as it made the call"
	case !c.Task.Pending():
		o.Left = true
		o.StackStop = why + ": the caller left the call (interrupted; it is made again)"
	}
}

// ownTest names the test whose own goroutine s is: the test, and
// whether tRunner called a literal of it (a subtest's function); "" when
// s is no test's own goroutine, or one whose test cannot be named
// (testGoroutine).
//
// A test's own goroutine is a complete stack whose outermost
// frames are the testing package's (testing.tRunner) and whose first
// function past them, the function tRunner called, is the module's
// test function itself (p.TestA: TestA's goroutine, or TestA's still
// running while its subtest does) or a func literal written directly
// in it (p.TestA.func1, p.TestA.func1.2: the function of a subtest of
// TestA, through t.Run). No other frame pins, however it is named. A
// function's name says where its code was written, not which goroutine
// runs it: TestA's closure may be stored and called by TestB, or from
// a goroutine TestB started, and when the compiler inlines a helper
// into TestA, the helper's closures are named after TestA
// (p.TestA.MakeDialer.func1.1). So a closure that is not tRunner's
// callee (a go statement's function, a callback) pins nothing, nor
// does a literal whose name has any element but funcN and numbers
// (an inlined helper's, a go statement's wrapper gowrapN), nor
// TestA's frame above another test's (TestB calling TestA(t)): the
// goroutine is TestB's. What tRunner called is the subtest's function
// whoever wrote it, so a subtest of TestB that runs a literal TestA
// stored would be pinned to TestA's subtests if any ran; nothing else
// puts TestA's literal under tRunner. (docs/tests.md, "Parallel
// tests".)
func ownTest(s *callstack.Stack, tab *callstack.Table) (string, bool) {
	if s == nil || !s.Complete {
		return "", false
	}
	w, _ := tab.Where(s)
	if !w.EntryIsTest {
		return "", false
	}
	test, literal := testOrLiteral(w.Entry)
	if test == "" || !isUserFunc(tab, s, w.Entry) {
		return "", false
	}
	return test, literal
}

// pinTo pins a call to test (literal: to its subtests) among who's
// candidates (tests running in parallel): nil when that does not narrow
// them; one test when it pins the call, several when it narrows the
// candidates to the subtests of one test. A pin is kept only where it
// cannot change the decision: when every candidate carries the marker
// or none does (a pinned test marked where the others are not would
// have to be decided again).
func pinTo(test string, literal bool, who Who) []string {
	if len(who.Candidates) < 2 || test == "" {
		return nil
	}
	if len(who.MarkedCandidates) != 0 && !who.Marked {
		return nil
	}
	var in []string
	for _, name := range who.Candidates {
		if name == test && !literal || strings.HasPrefix(name, test+"/") {
			in = append(in, name)
		}
	}
	switch {
	case len(in) == 0:
		return nil
	case !literal:
		// The test's own goroutine: the test, or a parent of the
		// running subtests (running its own code meanwhile). A
		// parent's marker is its subtests' too, so when none of them
		// is marked, neither is it; when all are, it may not be.
		if !slices.Contains(in, test) && who.Marked {
			return nil
		}
		return []string{test}
	case len(in) == len(who.Candidates):
		return nil
	}
	return in
}

// testOrLiteral tells whether fn is a test function (p.TestA: "TestA",
// false) or a func literal written directly in one (p.TestA.func1,
// p.TestA.func2.1: "TestA", true); "" for anything else.
func testOrLiteral(fn string) (string, bool) {
	test := TestOfFunc(fn)
	if test == "" {
		return "", false
	}
	short := audit.Frame{Func: fn}.ShortFunc()
	_, rest, _ := strings.Cut(short, ".")
	rest = strings.TrimPrefix(rest, test)
	if rest == "" {
		return test, false
	}
	elems := strings.Split(strings.TrimPrefix(rest, "."), ".")
	if !strings.HasPrefix(rest, ".") || !isNumbered(elems[0], "func") {
		return "", false
	}
	for _, e := range elems[1:] {
		if !isNumbered(e, "") {
			return "", false
		}
	}
	return test, true
}

// isNumbered tells whether e is prefix followed by a decimal number.
func isNumbered(e, prefix string) bool {
	n, ok := strings.CutPrefix(e, prefix)
	if !ok || n == "" {
		return false
	}
	for _, c := range n {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// isUserFunc tells whether the frame of function fn in s is the
// module's.
func isUserFunc(tab *callstack.Table, s *callstack.Stack, fn string) bool {
	for _, f := range s.Frames {
		if f.Func == fn {
			return isUserFrame(tab, f)
		}
	}
	return false
}

// pinWho is who with the candidates pin leaves (pinTo): the one test,
// or fewer candidates.
func pinWho(who Who, pin []string) Who {
	switch len(pin) {
	case 0:
		return who
	case 1:
		who.Test, who.Candidates, who.MarkedCandidates = pin[0], nil, nil
		return who
	}
	var marked []string
	for _, name := range who.MarkedCandidates {
		if slices.Contains(pin, name) {
			marked = append(marked, name)
		}
	}
	who.Candidates, who.MarkedCandidates = pin, marked
	return who
}

// stackOrigin is what stack s (symbolized by tab) tells of a call who
// names.
func stackOrigin(s *callstack.Stack, tab *callstack.Table, who Who) audit.Origin {
	o := audit.Origin{Stack: make([]audit.Frame, 0, len(s.Frames)), StackStop: s.Stop}
	for _, f := range s.Frames {
		o.Stack = append(o.Stack, audit.Frame{Func: tab.SourceName(f.Func), File: f.File, Line: f.Line})
	}
	w, ok := tab.Where(s)
	if w.Entry != "" && !w.EntryIsTest && w.Entry != "main.main" {
		o.Goroutine = tab.SourceName(w.Entry)
	}
	if !ok {
		// No frame of the module: a goroutine a library started (net/http
		// dials in its Transport's), which the stack ties to no test.
		// The line names its entry and no more.
		return o
	}
	o.Where = relFrame(tab, w.Frame, w.RelFile)
	test, tf, found := testFrame(s, tab)
	if found && (tf.Func != w.Frame.Func || tf.Line != w.Frame.Line || tf.File != w.Frame.File) {
		o.CalledFrom = relFrame(tab, tf, relFile(tab, tf))
	}
	if test != "" && s.Complete && inTests(who) && !who.Collection && !running(who, test) {
		// The outermost frame of test code is another test's, by its
		// name only: the stack shows no running test's goroutine, and
		// does not show who started this one.
		o.Unowned = true
	}
	return o
}

// relFrame is f as a record names where: its file relative to the
// module's root (rel), or its base name when that cannot be told, and
// its function as the source names it (main.ping, not the import path a
// test binary of a main package gives it: callstack.Table.SourceName).
func relFrame(tab *callstack.Table, f callstack.Frame, rel string) *audit.Frame {
	if rel == "" {
		rel = f.File[strings.LastIndexByte(f.File, '/')+1:]
	}
	return &audit.Frame{Func: tab.SourceName(f.Func), File: rel, Line: f.Line}
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
// and names the test (TestA). The outermost, because that is nearest
// to whose goroutine it is: a test's goroutine may call a closure
// another test made. A name, not a proof: see ownTest and Unowned.
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
