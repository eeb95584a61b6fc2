package teststream

import (
	"bytes"
	"regexp"
	"slices"
	"strings"
)

// render writes one event in r's mode, unless -failfast drops it. Called
// with r.mu held.
func (r *Renderer) render(e *Event) {
	if r.failFastEvent(e) {
		return
	}
	r.renderEvent(e)
}

func (r *Renderer) renderEvent(e *Event) {
	if e.Kind == kindVerdict {
		r.injectNow(injection{test: e.Test, line: e.Value})
		return
	}
	if e.Framed && len(r.pending) > 0 {
		// A framed line starts a line for test2json (and for readers).
		r.flushPending(true)
	}
	switch {
	case r.asIs:
		r.renderAsIs(e)
	case r.mode == ModeJSONFramed:
		r.renderJSON(e)
	case r.mode == ModeVerbose:
		r.renderVerbose(e)
	default:
		r.renderQuiet(e)
	}
	r.track(e)
	if e.LineEnd && r.atStart && len(r.pending) > 0 {
		r.flushPending(false)
	}
}

// track follows the stream's notion of the current test, as test2json does.
func (r *Renderer) track(e *Event) {
	switch e.Kind {
	case KindOutput:
	case KindFinal:
		r.cur = ""
	default:
		r.cur = e.Test
	}
	if e.Kind == KindEnd {
		delete(r.open, e.Test)
		delete(r.doomed, e.Test)
		delete(r.injected, e.Test)
		delete(r.blocks, e.Test)
	}
}

func (r *Renderer) renderJSON(e *Event) {
	switch e.Kind {
	case KindEnd:
		r.testFailed = r.testFailed || e.Result == "FAIL" || r.doomed[e.Test]
		r.writeBytes(r.endLine(e, e.Raw))
	case KindFinal:
		r.packageTest()
		r.writeBytes(r.finalLine(e))
	default:
		r.writeBytes(e.Raw)
	}
}

// endLine returns raw, with PASS or SKIP turned into FAIL if the test was
// failed by a verdict.
func (r *Renderer) endLine(e *Event, raw []byte) []byte {
	if !r.doomed[e.Test] || (e.Result != "PASS" && e.Result != "SKIP") {
		return raw
	}
	return bytes.Replace(raw, []byte("--- "+e.Result+": "), []byte("--- FAIL: "), 1)
}

func (r *Renderer) finalLine(e *Event) []byte {
	raw := e.Raw
	if r.mode != ModeJSONFramed {
		raw = unframe(raw)
	}
	if r.failed && e.Result == "PASS" {
		return bytes.Replace(raw, []byte("PASS"), []byte("FAIL"), 1)
	}
	return raw
}

func unframe(b []byte) []byte {
	return bytes.TrimPrefix(b, []byte{marker})
}

// header is a --- line as the binary prints it without -test.v=test2json:
// no marker, no indentation (the caller indents nested reports).
func (r *Renderer) header(e *Event) []byte {
	b := unframe(e.Raw)
	b = b[min(4*e.Indent, len(b)):]
	return r.endLine(e, b)
}

func isLogLine(b []byte) bool { return bytes.HasPrefix(b, []byte("    ")) }

func (r *Renderer) renderVerbose(e *Event) {
	switch e.Kind {
	case KindOutput:
		if !e.Framed && e.LineStart && isLogLine(e.Raw) {
			r.verboseName(e.Test)
		}
		r.writeBytes(unframe(e.Raw))
	case KindName:
		// Printed for test2json only (t.Run, examples, benchmarks), or by
		// the chatty printer before a log line: verboseName redoes that.
	case KindRun:
		if kindOf(e.Test) == kindBench {
			return // benchmarks print their name as plain output instead
		}
		r.writeBytes(unframe(e.Raw))
		r.setLast(e.Test)
	case KindPause, KindCont, KindAttr, KindArtifacts:
		r.writeBytes(unframe(e.Raw))
		r.setLast(e.Test)
	case KindEnd:
		r.verboseEnd(e)
	case KindFinal:
		r.writeBytes(r.finalLine(e))
	}
}

func (r *Renderer) setLast(test string) {
	if kindOf(test) == kindTest {
		r.vLast = test
	}
}

// verboseName prints the === NAME line that the chatty printer puts before
// a log line of a test other than the last one it named.
func (r *Renderer) verboseName(test string) {
	if test == "" || kindOf(test) != kindTest || test == r.vLast {
		return
	}
	if r.vLast != "" {
		r.write("=== NAME  " + test + "\n")
	}
	r.vLast = test
}

// verboseEnd prints a --- line. With -test.v=true a subtest's report goes to
// its parent's buffer, indented, and appears under the parent's own report;
// with test2json framing it is printed at once.
func (r *Renderer) verboseEnd(e *Event) {
	if kindOf(e.Test) != kindTest {
		r.writeBytes(unframe(e.Raw))
		return
	}
	block := slices.Concat(r.header(e), r.blocks[e.Test])
	if _, ok := r.open[e.Parent]; ok && e.Parent != "" {
		r.blocks[e.Parent] = append(r.blocks[e.Parent], indent(block)...)
		return
	}
	r.writeBytes(block)
	r.vLast = e.Test
}

func indent(b []byte) []byte {
	var out []byte
	for line := range bytes.Lines(b) {
		out = append(out, "    "...)
		out = append(out, line...)
	}
	return out
}

func (r *Renderer) renderQuiet(e *Event) {
	switch e.Kind {
	case KindOutput:
		r.quietOutput(e)
	case KindEnd:
		r.quietEnd(e)
	case KindFinal:
		r.writeBytes(r.finalLine(e))
	}
}

// quietOutput keeps a test's log lines (indented lines while a test is
// current) until its end, and writes everything else at once, as the
// binary does with fmt.Print output when not verbose.
func (r *Renderer) quietOutput(e *Event) {
	if e.Framed {
		r.writeBytes(unframe(e.Raw))
		return
	}
	if e.LineStart {
		// A log block starts with t.Log's "    file.go:12: " and goes on
		// with its continuation lines (indented by eight). Only these
		// are held: anything else a passing test prints, even indented,
		// appears at once, as the binary prints it without -v.
		cont := r.qInLog && r.qLog == e.Test && bytes.HasPrefix(e.Raw, []byte("        "))
		r.qInLog = (cont || logStart(e.Raw) == 0) && r.isTest(e.Test)
		r.qLog = e.Test
		if kindOf(e.Test) == kindBench && strings.TrimSuffix(string(e.Raw), "\n") == e.Test {
			return // the chatty benchmark runner's name line
		}
	}
	if !r.qInLog && e.LineEnd && r.isTest(e.Test) {
		if i := logStart(e.Raw); i > 0 {
			// Output without newline followed by a log line: the binary
			// printed the first part at once and buffered the second.
			r.writeBytes(e.Raw[:i])
			r.blocks[e.Test] = append(r.blocks[e.Test], e.Raw[i:]...)
			return
		}
	}
	if r.qInLog && r.isTest(r.qLog) {
		r.blocks[r.qLog] = append(r.blocks[r.qLog], e.Raw...)
		return
	}
	r.writeBytes(e.Raw)
}

// quietEnd prints a failed test's report with its log under it (into the
// parent's buffer for a subtest) and forgets a passed test's log.
func (r *Renderer) quietEnd(e *Event) {
	switch kindOf(e.Test) {
	case kindBench:
		r.writeBytes(unframe(e.Raw))
		return
	case kindExample:
		if e.Result == "FAIL" || r.doomed[e.Test] {
			r.writeBytes(r.header(e))
		}
		return
	}
	if e.Result != "FAIL" && !r.doomed[e.Test] {
		return
	}
	block := slices.Concat(r.header(e), r.blocks[e.Test])
	if r.isTest(e.Parent) {
		r.blocks[e.Parent] = append(r.blocks[e.Parent], indent(block)...)
		return
	}
	r.writeBytes(block)
}

// callSite matches the "    file.go:12: " that t.Log puts in front of a line.
var callSite = regexp.MustCompile(`    (?:[^ \t\n]+\.go|\?\?\?):\d+: `)

// logStart returns where a t.Log line starts inside a line that begins with
// other output, or -1.
func logStart(b []byte) int {
	loc := callSite.FindIndex(b)
	if loc == nil {
		return -1
	}
	return loc[0]
}
