package teststream

import (
	"bytes"
	"strings"
	"sync"
)

// Parser is a push parser of `-test.v=test2json` output. Write the test
// binary's stdout (and stderr, if it goes to the same pipe) into it in chunks
// of any size; it calls the handler for every line, in order, and keeps the
// state of every test. Write never fails and never blocks on anything but the
// handler.
//
// The query methods may be called from any goroutine, also from the handler.
type Parser struct {
	wmu     sync.Mutex // serializes Write and Close
	split   *splitter
	handler Handler
	inLine  bool    // the last output did not end its line
	framing Framing // which lines may be framing lines
	marked  bool    // a line with the marker was seen: only such lines frame

	mu sync.RWMutex // guards st
	st tree
}

// Framing says which lines of the stream are framing lines.
type Framing int

const (
	// FramingMarked: only lines that begin with the marker, as the binary
	// prints them with -test.v=test2json. Output that merely looks like a
	// framing line is output.
	FramingMarked Framing = iota
	// FramingAny: also lines without the marker, as -test.v=true and the
	// --- FAIL lines of -test.v=false print them, until the first line with
	// the marker is seen (cmd/test2json reads its input the same way).
	FramingAny
)

// NewParser returns a Parser of -test.v=test2json output (FramingMarked)
// that calls h (which may be nil) for every event.
func NewParser(h Handler) *Parser {
	return newParser(h, maxLine)
}

// NewParserFraming is NewParser for a stream whose framing is f.
func NewParserFraming(h Handler, f Framing) *Parser {
	p := newParser(h, maxLine)
	p.framing = f
	return p
}

func newParser(h Handler, size int) *Parser {
	p := &Parser{handler: h, st: newTree()}
	p.split = newSplitter(size, p.line, p.part)
	return p
}

// Write feeds a chunk of the stream. It always consumes all of b.
func (p *Parser) Write(b []byte) (int, error) {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	p.split.write(b)
	return len(b), nil
}

// Close passes on a last line that lacks its newline. Call it once the
// stream has ended; the parser must not be written to afterwards.
func (p *Parser) Close() error {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	p.split.flush()
	return nil
}

func (p *Parser) emit(e *Event) {
	if p.handler != nil {
		p.handler(e)
	}
}

// part handles a piece of a line too long to buffer. Framing lines are
// never that long, so it is output.
func (p *Parser) part(b []byte, end bool) {
	e := &Event{Kind: KindOutput, Raw: b, LineStart: !p.inLine, LineEnd: end}
	e.Framed = e.LineStart && len(b) > 0 && b[0] == marker
	p.inLine = !end
	p.mu.RLock()
	e.Test = p.st.current
	p.mu.RUnlock()
	p.emit(e)
}

// line handles a whole line (ending in '\n', or cut before a marker, or the
// last bytes of the stream).
func (p *Parser) line(b []byte) {
	p.inLine = false
	e := &Event{Kind: KindOutput, Raw: b, LineStart: true, LineEnd: true}
	switch {
	case len(b) > 0 && b[0] == marker:
		e.Framed, p.marked = true, true
		p.mu.Lock()
		p.frame(e, trimEOL(b[1:]))
		p.mu.Unlock()
	case p.framing == FramingAny && !p.marked:
		p.mu.Lock()
		p.frameUnmarked(e, trimEOL(b))
		p.mu.Unlock()
	}
	if e.Kind == KindOutput {
		p.mu.RLock()
		e.Test = p.st.current
		p.mu.RUnlock()
	}
	p.emit(e)
}

func trimEOL(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte("\n"))
	return bytes.TrimSuffix(b, []byte("\r"))
}

var updates = []struct {
	prefix string
	kind   Kind
}{
	{"=== RUN   ", KindRun},
	{"=== PAUSE ", KindPause},
	{"=== CONT  ", KindCont},
	{"=== NAME  ", KindName},
	{"=== ATTR  ", KindAttr},
	{"=== ARTIFACTS ", KindArtifacts},
}

var reports = []string{"--- PASS: ", "--- FAIL: ", "--- SKIP: ", "--- BENCH: "}

// frame interprets the text of a framed line and updates the state. Lines it
// does not know stay KindOutput. Called with p.mu held.
func (p *Parser) frame(e *Event, text []byte) {
	s := string(text)
	switch {
	case isFinal(s):
		e.Kind, e.Result = KindFinal, s[:4]
		p.st.finalLine(e.Result)
		return
	case s == "=== NAME": // trailing spaces of an empty name may be lost
		e.Kind = KindName
		p.st.name("")
		return
	}
	for _, u := range updates {
		if rest, ok := strings.CutPrefix(s, u.prefix); ok {
			p.update(e, u.kind, strings.TrimSpace(rest))
			return
		}
	}
	indent := 0
	for strings.HasPrefix(s, "    ") {
		s = s[4:]
		indent++
	}
	for _, r := range reports {
		if rest, ok := strings.CutPrefix(s, r); ok {
			e.Kind, e.Indent = KindEnd, indent
			e.Result = r[4 : len(r)-2]
			e.Test, e.Elapsed = splitElapsed(rest)
			e.Test, e.Parent = p.st.end(e.Test, e.Result, e.Elapsed)
			return
		}
	}
}

func (p *Parser) update(e *Event, k Kind, name string) {
	e.Kind = k
	switch k {
	case KindRun:
		if !e.Framed {
			p.st.endSiblings(name)
		}
		e.Test, e.Parent = name, p.st.run(name).parent
	case KindPause:
		e.Test = name
		p.st.setState(name, Paused)
	case KindCont:
		e.Test = name
		p.st.setState(name, Running)
	case KindName:
		e.Test = name
		p.st.name(name)
	case KindAttr:
		var rest string
		e.Test, rest, _ = strings.Cut(name, " ")
		e.Key, e.Value, _ = strings.Cut(rest, " ")
		p.st.attr(e.Test, e.Key, e.Value)
	case KindArtifacts:
		e.Test, e.Value, _ = strings.Cut(name, " ")
		p.st.current = e.Test
	}
}

// splitElapsed splits "Name (0.00s)" into name and "0.00s".
func splitElapsed(s string) (string, string) {
	s = strings.TrimSpace(s)
	i := strings.LastIndex(s, " (")
	if i < 0 || !strings.HasSuffix(s, "s)") {
		return s, ""
	}
	return s[:i], s[i+2 : len(s)-1]
}

// Running returns the running tests (not paused, not finished) that have no
// running subtest: the candidates for the test that is executing right now.
// With sequential tests it has at most one element.
func (p *Parser) Running() []string {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.st.leaves()
}

// Test returns what is known about the named test.
func (p *Parser) Test(name string) (TestInfo, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.st.info(name)
}

// Attr returns the value of attribute key set on the test itself with
// t.Attr (not inherited).
func (p *Parser) Attr(test, key string) (string, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if t := p.st.tests[test]; t != nil {
		v, ok := t.attrs[key]
		return v, ok
	}
	return "", false
}

// Marked reports whether the test or one of its ancestors carries the
// attribute key=value.
func (p *Parser) Marked(test, key, value string) bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.st.marked(test, key, value)
}

// InTest reports whether a test is in progress (running or paused). When it
// is false the binary is at collection time: package init, TestMain before
// or after m.Run, or between tests.
func (p *Parser) InTest() bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return len(p.st.active) > 0
}

// Snapshot is a consistent view of the parser state at one moment.
type Snapshot struct {
	Running    []string // leaf candidates, as Parser.Running
	Active     []string // all started and unfinished tests, paused ones included
	Collection bool     // no test in progress
	Started    bool     // some test has started
	Final      string   // "PASS" or "FAIL" once the binary printed it, else ""
	Current    string   // the test that output is attributed to now
}

// Snapshot returns the state at this moment, taken under one lock.
func (p *Parser) Snapshot() Snapshot {
	p.mu.RLock()
	defer p.mu.RUnlock()
	s := Snapshot{
		Running:    p.st.leaves(),
		Collection: len(p.st.active) == 0,
		Started:    p.st.started,
		Final:      p.st.final,
		Current:    p.st.current,
	}
	for _, t := range p.st.active {
		s.Active = append(s.Active, t.name)
	}
	return s
}
