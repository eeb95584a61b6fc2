package teststream

import (
	"bytes"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
)

// Mode selects what the Renderer writes.
type Mode int

// Output modes.
const (
	// ModeJSONFramed passes the stream through byte for byte, for a caller
	// (the go command's test2json) that asked for -test.v=test2json.
	ModeJSONFramed Mode = iota
	// ModeVerbose writes what the binary prints with -test.v=true.
	ModeVerbose
	// ModeQuiet writes what the binary prints without -test.v.
	ModeQuiet
)

// Renderer turns the events of a Parser back into the output of one Mode,
// and lets a supervisor fail tests and the package on the way. Pass its
// Handle method to NewParser. All methods are safe for concurrent use.
//
// Ordering: the Renderer writes each event as it arrives, except
//   - the final PASS/FAIL line and everything after it, which wait for Close
//     (TestMain may still make a collection-time attempt after m.Run);
//   - while a Hold is outstanding, every --- line and everything after it,
//     which wait for the last release, so that a verdict that is being
//     decided can still turn a --- PASS into --- FAIL.
type Renderer struct {
	mu   sync.Mutex
	w    io.Writer
	mode Mode
	err  error

	holds     int
	queue     []Event // held events, Raw copied
	finalSeen bool    // the final line is queued: all later events wait for Close
	closed    bool

	open     map[string]string   // tests whose end is not rendered yet -> parent
	doomed   map[string]bool     // tests to be rendered as failed
	injected map[string][]string // verdict lines per open test
	pending  []injection         // verdict lines waiting for a line boundary
	failed   bool                // a verdict was injected (the package fails)
	atStart  bool                // the written output ends a line
	cur      string              // test that output is attributed to, as in the stream

	// ModeJSONFramed: the package's own verdict lines, and whether a
	// test's --- FAIL line was written, for the package's test
	// (packageTest); packaged once it is written.
	pkgVerdicts []string
	testFailed  bool
	packaged    bool

	ff failFast // -test.failfast

	vLast  string            // ModeVerbose: the chatty printer's last test name
	blocks map[string][]byte // held text per test: reports (verbose), logs and reports (quiet)
	qLog   string            // ModeQuiet: the test whose log line is being buffered
	qInLog bool
	asIs   bool // the stream has unmarked framing lines: written as it is
}

type injection struct {
	test string // "" for the package
	line string
}

// NewRenderer returns a Renderer writing to w in the given mode.
func NewRenderer(w io.Writer, mode Mode) *Renderer {
	return &Renderer{
		w: w, mode: mode, atStart: true,
		open:     make(map[string]string),
		doomed:   make(map[string]bool),
		injected: make(map[string][]string),
		blocks:   make(map[string][]byte),
	}
}

// Handle consumes one parser event. It is meant to be the Parser's Handler.
func (r *Renderer) Handle(e *Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ff.stopped {
		r.failFastEvent(e) // dropped
		return
	}
	if e.Kind == KindRun {
		r.open[e.Test] = e.Parent
	}
	r.latchAsIs(e)
	if r.finalSeen || e.Kind == KindFinal || (r.holds > 0 && (e.Kind == KindEnd || len(r.queue) > 0)) {
		c := *e
		c.Raw = bytes.Clone(e.Raw)
		r.queue = append(r.queue, c)
		r.finalSeen = r.finalSeen || e.Kind == KindFinal
		return
	}
	r.render(e)
}

// Hold delays every --- line (and what follows it) until the returned
// function has been called. A supervisor takes a hold when a network call
// arrives, before it drains the pipe, and releases it once it has decided
// the call (and called Fail if it denied it). Holds nest; release is
// idempotent.
func (r *Renderer) Hold() (release func()) {
	r.mu.Lock()
	r.holds++
	r.mu.Unlock()
	var once sync.Once
	return func() { once.Do(r.release) }
}

func (r *Renderer) release() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.holds--
	if r.holds == 0 {
		r.drain(false)
	}
}

// drain renders queued events; the final line and what follows it only if
// all is true.
func (r *Renderer) drain(all bool) {
	for len(r.queue) > 0 {
		if !all && r.queue[0].Kind == KindFinal {
			return
		}
		e := r.queue[0]
		r.queue = r.queue[1:]
		r.render(&e)
	}
	r.finalSeen = false
}

// Fail fails test: line is printed as the test's output (indented like
// t.Error output and, in ModeJSONFramed, attributed to the test), its
// --- PASS or --- SKIP line becomes --- FAIL, so do its parents', and the
// final PASS becomes FAIL. It reports false if the test's end has already
// been written (or the test never started): the caller should then fail the
// package instead.
func (r *Renderer) Fail(test, line string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ff.stopped {
		// The binary was stopped under -failfast: the rest of its
		// output, this test's report included, is not shown.
		r.failed = true
		return true
	}
	if _, ok := r.open[test]; !ok || test == "" {
		return false
	}
	r.failed = true
	for t, depth := test, 0; t != "" && depth < 1000; depth++ {
		r.doomed[t] = true
		t = r.open[t]
	}
	r.injected[test] = append(r.injected[test], line)
	r.inject(injection{test: test, line: line})
	return true
}

// FailPackage records a collection-time verdict: line is printed outside
// any test and the final PASS becomes FAIL.
func (r *Renderer) FailPackage(line string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed = true
	if !r.ff.stopped {
		r.inject(injection{line: line})
		r.pkgVerdicts = append(r.pkgVerdicts, line)
	}
}

// Say prints line as the output of test (indented like t.Log output
// and, in ModeJSONFramed, attributed to the test) without failing it:
// a finding that does not change the verdict, such as an attempt
// --mode=audit would have blocked. It reports false if the test's end
// has already been written (or the test never started): the caller may
// then Note it. In ModeQuiet a passing test's output is not shown, so
// the line goes out among the package's lines, now.
func (r *Renderer) Say(test, line string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ff.stopped {
		return true
	}
	if _, ok := r.open[test]; !ok || test == "" {
		return false
	}
	if r.mode == ModeQuiet && !r.asIs {
		test = ""
	}
	r.inject(injection{test: test, line: line})
	return true
}

// Note prints line outside any test, before the final line, without
// failing anything (e.g. nettrap's stale-marker report).
func (r *Renderer) Note(line string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.inject(injection{line: line})
}

// Failed reports whether a verdict was injected, i.e. whether the run must
// be reported as failed whatever the binary's own result.
func (r *Renderer) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed
}

// Close writes everything still held, in order, and verdict lines that had
// no place yet (a test that never ended, e.g. after os.Exit). Call it after
// the parser has been closed. It returns the first write error.
func (r *Renderer) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return r.err
	}
	r.closed = true
	r.drain(true)
	r.flushPending(true)
	r.packageTest() // the binary printed no final line (it died)
	if r.mode == ModeQuiet && !r.asIs {
		// A failed test that never printed its end: its buffered output
		// would be lost, as the binary loses it, but the verdict must show.
		for _, t := range slices.Sorted(maps.Keys(r.injected)) {
			for _, l := range r.injected[t] {
				r.write(verdictText(l, ""))
			}
		}
	}
	r.failFastFinal()
	return r.err
}

// kindVerdict is a verdict line waiting in the queue (never made by the
// Parser): Test is the test ("" for the package), Value the line.
const kindVerdict Kind = -1

// inject places a verdict line. Events still queued by a Hold were printed
// before the call the verdict is about, so the verdict goes behind them
// (but before the failed test's own queued end and the final line, which
// it must precede); otherwise it goes out at the next line boundary.
// Called with r.mu.
func (r *Renderer) inject(in injection) {
	if len(r.queue) == 0 {
		r.injectNow(in)
		return
	}
	i := slices.IndexFunc(r.queue, func(e Event) bool {
		return e.Kind == KindFinal || (in.test != "" && e.Kind == KindEnd && e.Test == in.test)
	})
	if i < 0 {
		i = len(r.queue)
	}
	r.queue = slices.Insert(r.queue, i, Event{Kind: kindVerdict, Test: in.test, Value: in.line})
}

func (r *Renderer) injectNow(in injection) {
	if r.mode == ModeQuiet && !r.asIs && r.isTest(in.test) {
		r.blocks[in.test] = append(r.blocks[in.test], verdictText(in.line, "    ")...)
		return
	}
	r.pending = append(r.pending, in)
	if r.atStart {
		r.flushPending(false)
	}
}

// flushPending writes waiting verdict lines. It is called at line
// boundaries; force also when the output is in the middle of a line.
func (r *Renderer) flushPending(force bool) {
	for _, in := range r.pending {
		r.writeInjection(in, force)
	}
	r.pending = r.pending[:0]
}

func (r *Renderer) writeInjection(in injection, force bool) {
	indent := ""
	if in.test != "" {
		indent = "    "
	}
	switch {
	case r.asIs:
		r.writeAsIsInjection(in, indent, force)
	case r.mode == ModeJSONFramed:
		// A framed === NAME line attributes the verdict to the test in
		// test2json, and a second one gives the following output back to
		// the test it belonged to. The marker also ends an unfinished line.
		switched := in.test != r.cur || !r.atStart
		if switched {
			r.write(frameName(in.test))
		}
		r.write(verdictText(in.line, indent))
		if switched {
			r.write(frameName(r.cur))
		}
	default:
		if !r.atStart && force {
			r.write("\n")
		}
		if in.test != "" && in.test != r.vLast {
			r.write("=== NAME  " + in.test + "\n")
			r.vLast = in.test
		}
		r.write(verdictText(in.line, indent))
	}
}

func frameName(test string) string { return string(marker) + "=== NAME  " + test + "\n" }

// verdictText formats a verdict like t.Error output: continuation lines get
// four more spaces.
func verdictText(line, indent string) string {
	line = strings.TrimSuffix(line, "\n")
	return indent + strings.ReplaceAll(line, "\n", "\n"+indent+"    ") + "\n"
}

func (r *Renderer) write(s string) { r.writeBytes([]byte(s)) }

func (r *Renderer) writeBytes(b []byte) {
	if len(b) == 0 {
		return
	}
	r.atStart = b[len(b)-1] == '\n'
	if r.err != nil {
		return
	}
	if _, err := r.w.Write(b); err != nil {
		r.err = err
	}
}

// isTest reports whether name is an open test or subtest (not a benchmark
// or an example, whose output the testing package does not buffer).
func (r *Renderer) isTest(name string) bool {
	if _, ok := r.open[name]; !ok || name == "" {
		return false
	}
	return kindOf(name) == kindTest
}

type testKind int

const (
	kindTest testKind = iota
	kindBench
	kindExample
)

func kindOf(name string) testKind {
	root, _, _ := strings.Cut(name, "/")
	switch {
	case strings.HasPrefix(root, "Benchmark"):
		return kindBench
	case strings.HasPrefix(root, "Example"):
		return kindExample
	}
	return kindTest
}
