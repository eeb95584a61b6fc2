package teststream

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// failFast is the Renderer's state under -test.failfast. The binary stops
// starting tests after a failure it knows of; a verdict is a failure it
// does not know of, so the Renderer stops the binary instead: once the
// report of a test failed by a verdict has been rendered, the start of
// another test (=== RUN of a test or fuzz target; examples and benchmarks
// are not stopped by -failfast either) calls stop, and that start and
// everything after it is dropped. Tests that were started before go on as
// they would (paused parallel tests continue).
type failFast struct {
	stop    func()               // kills the binary; nil: -failfast is off
	started map[string]time.Time // open tests: when their start was rendered
	failed  string               // the first test failed by a verdict whose report was rendered
	stopped bool                 // stop was called: the stream is over
	dropped map[string]bool      // tests whose start was dropped
}

// FailFast makes the Renderer behave as the binary does under
// -test.failfast for the tests that verdicts fail: after the report of
// such a test, the next test start is not rendered, stop is called (once,
// with the Renderer's lock held: it must not call the Renderer; it should
// kill the binary), and everything the binary writes after that is
// dropped. The Renderer then ends the failed tests that are still open
// (the parents of a failed subtest) with --- FAIL, says in a note that it
// stopped the binary, and Close writes the final FAIL line. Call FailFast
// before the first event.
func (r *Renderer) FailFast(stop func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ff.stop = stop
	r.ff.started = make(map[string]time.Time)
	r.ff.dropped = make(map[string]bool)
}

// Stopped reports whether the Renderer stopped the binary under
// -failfast.
func (r *Renderer) Stopped() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ff.stopped
}

// Dropped reports whether test started only after the binary was stopped
// under -failfast: its start and all it did were not rendered.
func (r *Renderer) Dropped(test string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ff.dropped[test]
}

// failFastEvent handles e under -failfast before it is rendered, and
// reports whether e must be dropped. Called with r.mu.
func (r *Renderer) failFastEvent(e *Event) (drop bool) {
	if r.ff.stop == nil || e.Kind == kindVerdict {
		return false
	}
	if r.ff.stopped {
		if e.Kind == KindRun {
			r.drop(e.Test)
		}
		return true
	}
	switch e.Kind {
	case KindRun:
		if r.ff.failed != "" && kindOf(e.Test) == kindTest {
			r.stopBinary(e.Test)
			return true
		}
		r.ff.started[e.Test] = time.Now()
	case KindEnd:
		if r.ff.failed == "" && r.doomed[e.Test] && kindOf(e.Test) == kindTest {
			r.ff.failed = e.Test
		}
		delete(r.ff.started, e.Test)
	}
	return false
}

// stopBinary stops the binary as next starts: the rest of the stream is
// dropped, the failed tests still open get their report, and a note says
// what happened. Called with r.mu.
func (r *Renderer) stopBinary(next string) {
	r.ff.stopped = true
	r.drop(next)
	for _, e := range r.queue { // what the binary wrote after next's start
		if e.Kind == KindRun {
			r.drop(e.Test)
		}
	}
	r.queue = nil
	r.ff.stop()
	var running []string
	for _, t := range r.openByDepth() {
		if !r.doomed[t] {
			if kindOf(t) == kindTest {
				running = append(running, t)
			}
			continue
		}
		// A parent of the failed test: it fails with it, and its report
		// carries its subtests' reports.
		elapsed := 0.0
		if at, ok := r.ff.started[t]; ok {
			elapsed = time.Since(at).Seconds()
		}
		raw := fmt.Sprintf("%c--- FAIL: %s (%.2fs)\n", marker, t, elapsed)
		r.renderEvent(&Event{Kind: KindEnd, Test: t, Parent: r.open[t], Result: "FAIL",
			Elapsed: fmt.Sprintf("%.2fs", elapsed), Framed: true, LineStart: true, LineEnd: true, Raw: []byte(raw)})
	}
	note := fmt.Sprintf("nettrap: -test.failfast: %s failed, so nettrap stopped the test binary as %s started: later tests did not run",
		r.ff.failed, next)
	if len(running) > 0 {
		slices.Sort(running)
		note += " (still running, without a result: " + strings.Join(running, ", ") + ")"
	}
	r.injectNow(injection{line: note})
}

// drop forgets a test whose start is not rendered, and the verdicts it got
// meanwhile (a call it made before the binary was stopped). Called with
// r.mu.
func (r *Renderer) drop(test string) {
	r.ff.dropped[test] = true
	delete(r.open, test)
	delete(r.injected, test)
	delete(r.blocks, test)
	delete(r.doomed, test)
}

// openByDepth lists the open tests, subtests before their parents.
func (r *Renderer) openByDepth() []string {
	return slices.SortedFunc(maps.Keys(r.open), func(a, b string) int {
		return cmp.Or(cmp.Compare(len(b), len(a)), cmp.Compare(a, b))
	})
}

// failFastFinal writes the final line a stopped binary could not write.
// Called with r.mu by Close.
func (r *Renderer) failFastFinal() {
	if !r.ff.stopped {
		return
	}
	r.renderEvent(&Event{Kind: KindFinal, Result: "FAIL", Framed: true, LineStart: true, LineEnd: true,
		Raw: []byte{marker, 'F', 'A', 'I', 'L', '\n'}})
}
