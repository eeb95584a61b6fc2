package teststream

import "fmt"

// Kind says what a line of the stream means.
type Kind int

// The kinds of events. Each corresponds to one framing line of
// `-test.v=test2json` output, except KindOutput (everything else).
const (
	KindOutput    Kind = iota // output: a line or a piece of a long line
	KindRun                   // === RUN   Test
	KindPause                 // === PAUSE Test
	KindCont                  // === CONT  Test
	KindName                  // === NAME  Test (Test may be empty)
	KindAttr                  // === ATTR  Test key value
	KindArtifacts             // === ARTIFACTS Test dir
	KindEnd                   // --- PASS/FAIL/SKIP/BENCH: Test (0.00s)
	KindFinal                 // PASS or FAIL, printed by the binary when all is done
)

var kindNames = [...]string{"output", "run", "pause", "cont", "name", "attr", "artifacts", "end", "final"}

func (k Kind) String() string {
	if k >= 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Event is one parsed piece of the stream. Raw holds the bytes exactly as
// read, marker and line ending included; the concatenation of the Raw of all
// events is the input, byte for byte.
type Event struct {
	Kind Kind
	// Test is the test named by a framing line; for output, the test it is
	// attributed to (the last test named by a framing line, as test2json
	// does); empty for output outside tests.
	Test string
	// Parent is the enclosing test of Test for KindRun and KindEnd ("" for a
	// top-level test).
	Parent string
	// Key and Value of a KindAttr event; Value holds the directory of a
	// KindArtifacts event.
	Key, Value string
	// Result is PASS, FAIL, SKIP or BENCH for KindEnd, PASS or FAIL for
	// KindFinal.
	Result string
	// Elapsed is the duration of a KindEnd as printed ("0.01s"), or "".
	Elapsed string
	// Indent is the number of 4-space indents in front of a KindEnd line.
	Indent int
	// Framed reports whether the line began with the test2json marker.
	Framed bool
	// LineStart reports whether the output begins a line (it does not when
	// it continues a long line passed on in pieces).
	LineStart bool
	// LineEnd reports whether Raw ends a line: it ends in '\n', or the next
	// byte is a marker, or the stream ended.
	LineEnd bool
	// Raw is the input. It is only valid during the handler call.
	Raw []byte
}

// Handler receives the events of a Parser, in stream order, from the
// goroutine that calls Parser.Write. It may call the Parser's query methods.
type Handler func(e *Event)
