package teststream

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

func itoa(i int) string     { return strconv.Itoa(i) }
func quote(b []byte) string { return strconv.Quote(string(b)) }

// feeders write a stream into a Parser in differently cut chunks.
var feeders = []struct {
	name string
	feed func(p *Parser, in []byte)
}{
	{"whole", func(p *Parser, in []byte) { p.Write(bytes.Clone(in)) }},
	{"lines", func(p *Parser, in []byte) {
		for _, l := range bytes.SplitAfter(in, []byte("\n")) {
			p.Write(bytes.Clone(l))
		}
	}},
	{"bytes1", func(p *Parser, in []byte) { feedChunks(p, in, 0, 1) }},
	{"even2", func(p *Parser, in []byte) { feedChunks(p, in, 0, 2) }},
	{"odd2", func(p *Parser, in []byte) { feedChunks(p, in, 1, 2) }},
	{"chunk7", func(p *Parser, in []byte) { feedChunks(p, in, 0, 7) }},
}

// feedChunks writes in[:first] and then n bytes at a time, each write in a
// fresh buffer that is clobbered afterwards, so that a parser keeping a
// reference to written bytes shows up.
func feedChunks(p *Parser, in []byte, first, n int) {
	if first > 0 {
		p.Write(bytes.Clone(in[:first]))
	}
	for i := first; i < len(in); i += n {
		c := bytes.Clone(in[i:min(i+n, len(in))])
		p.Write(c)
		for j := range c {
			c[j] = 'X'
		}
	}
}

// renderAll renders in through a parser with the given line buffer size,
// fed by feeders[feeder].
func renderAll(in []byte, m Mode, size, feeder int) []byte {
	return renderFramed(in, m, FramingMarked, size, feeder)
}

// renderFramed is renderAll for a parser in framing f.
func renderFramed(in []byte, m Mode, f Framing, size, feeder int) []byte {
	var out bytes.Buffer
	r := NewRenderer(&out, m)
	p := newParser(r.Handle, size)
	p.framing = f
	feeders[feeder].feed(p, in)
	p.Close()
	r.Close()
	return out.Bytes()
}

// TestGolden renders the recorded test2json streams of the fixture binary
// and compares with what the binary printed natively in each mode.
func TestGolden(t *testing.T) {
	for _, sc := range scenarios {
		in := readGolden(t, sc.name, ModeJSONFramed)
		for _, m := range sc.modes {
			want := readGolden(t, sc.name, m)
			for fi, f := range feeders {
				for _, size := range []int{maxLine, 64} {
					name := fmt.Sprintf("%s/%s/%s/%d", sc.name, modeFiles[m], f.name, size)
					t.Run(name, func(t *testing.T) {
						got := renderAll(in, m, size, fi)
						if !bytes.Equal(got, want) {
							t.Errorf("%s", lineDiff(got, want))
						}
					})
				}
			}
		}
	}
}

// trace records the parser's events and its state after each framing line,
// merging output pieces into lines so that traces do not depend on how the
// input was cut.
type trace struct {
	p       *Parser
	b       strings.Builder
	out     []byte
	outTest string
}

func (tr *trace) handle(e *Event) {
	if e.Kind == KindOutput && !e.Framed {
		if len(tr.out) == 0 {
			tr.outTest = e.Test
		}
		tr.out = append(tr.out, e.Raw...)
		if e.LineEnd {
			tr.flushOut()
		}
		return
	}
	tr.flushOut()
	fmt.Fprintf(&tr.b, "%s test=%q", e.Kind, e.Test)
	switch e.Kind {
	case KindRun:
		fmt.Fprintf(&tr.b, " parent=%q", e.Parent)
	case KindAttr:
		fmt.Fprintf(&tr.b, " key=%q value=%q", e.Key, e.Value)
	case KindEnd:
		fmt.Fprintf(&tr.b, " parent=%q result=%s elapsed=%q indent=%d", e.Parent, e.Result, e.Elapsed, e.Indent)
	case KindFinal:
		fmt.Fprintf(&tr.b, " result=%s", e.Result)
	case KindOutput:
		fmt.Fprintf(&tr.b, " framed=%q", e.Raw)
	}
	s := tr.p.Snapshot()
	fmt.Fprintf(&tr.b, "\n\tstate: running=%q active=%q collection=%v final=%q\n", s.Running, s.Active, s.Collection, s.Final)
}

func (tr *trace) flushOut() {
	if len(tr.out) == 0 {
		return
	}
	o := tr.out
	if len(o) > 80 {
		o = append(append(bytes.Clone(o[:60]), "..."...), o[len(o)-10:]...)
	}
	fmt.Fprintf(&tr.b, "output test=%q len=%d %q\n", tr.outTest, len(tr.out), o)
	tr.out = tr.out[:0]
}

func parseTrace(in []byte, size, feeder int) string {
	tr := &trace{}
	tr.p = newParser(tr.handle, size)
	feeders[feeder].feed(tr.p, in)
	tr.p.Close()
	tr.flushOut()
	return tr.b.String()
}

// TestParserGolden compares the parser's events and state with a golden
// trace, for every way of cutting the input.
func TestParserGolden(t *testing.T) {
	for _, sc := range scenarios {
		in := readGolden(t, sc.name, ModeJSONFramed)
		if *update {
			writeGolden(t, sc.name, modeTrace, []byte(parseTrace(in, maxLine, 0)))
		}
		want := string(readGolden(t, sc.name, modeTrace))
		for fi, f := range feeders {
			for _, size := range []int{maxLine, 64} {
				t.Run(fmt.Sprintf("%s/%s/%d", sc.name, f.name, size), func(t *testing.T) {
					got := parseTrace(in, size, fi)
					if got != want {
						t.Errorf("%s", lineDiff([]byte(got), []byte(want)))
					}
				})
			}
		}
	}
}

const modeTrace Mode = 99

func init() { modeFiles[modeTrace] = "events" }
