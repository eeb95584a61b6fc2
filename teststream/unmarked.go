package teststream

import (
	"bytes"
	"strings"
)

// This file reads the lines that -test.v=true (and, for --- FAIL and the
// final line, -test.v=false) prints without the marker. They differ from
// the framed stream in what they leave out: a subtest's --- line waits in
// its parent's buffer and comes after the parent's own, and benchmarks
// print their name instead of === RUN.

// frameUnmarked interprets a line without the marker in a FramingAny
// stream before any marker was seen. Called with p.mu held.
func (p *Parser) frameUnmarked(e *Event, text []byte) {
	s := string(text)
	if isFinal(s) && p.st.inTest() {
		// The binary prints its final line after every test has ended;
		// a PASS while one runs is the test's own output.
		return
	}
	p.frame(e, text)
	if e.Kind == KindOutput && isBenchmarkLine(text) && !p.st.inTest() {
		// The chatty benchmark runner prints the name of a benchmark
		// as it starts it; the framed stream has === RUN there.
		p.update(e, KindRun, s)
	}
}

func isFinal(s string) bool {
	return s == "PASS" || s == "FAIL" || strings.HasPrefix(s, "FAIL\t")
}

// isBenchmarkLine: a line that is a benchmark's name and nothing else.
func isBenchmarkLine(b []byte) bool {
	return isBenchmarkName(b) && !bytes.ContainsAny(b, " \t")
}

// inTest reports whether a test (not a benchmark) is in progress.
func (tr *tree) inTest() bool {
	for _, t := range tr.active {
		if !t.bench {
			return true
		}
	}
	return false
}

// endSiblings handles an unmarked === RUN. The parent prints it inside
// t.Run, which returns only once the previous subtest has finished (or
// paused in t.Parallel); without the marker that subtest's --- line waits
// for the parent's, so this is the first sign that a running sibling and
// everything under it are done.
func (tr *tree) endSiblings(name string) {
	parent := tr.parentOf(name)
	var done []string
	for _, t := range tr.active {
		if t.state == Running && t.parent == parent && t.name != name {
			done = append(done, t.name)
		}
	}
	if len(done) == 0 {
		return
	}
	tr.finish(func(t *test) bool {
		for _, d := range done {
			if t.name == d || isDescendant(t.name, d) {
				return true
			}
		}
		return false
	})
}
