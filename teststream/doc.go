// Package teststream reads the output of a Go test binary run with
// -test.v=test2json, keeps the state of every test, and writes the output
// back in the form the user asked for, with nettrap's verdicts worked in.
//
// # Parser
//
// A Parser is an io.Writer fed the binary's stdout+stderr pipe in chunks of
// any size. It splits lines the way cmd/internal/test2json does: at '\n',
// and before a ^V marker byte that does not begin a line; lines longer than
// 4 KiB are passed on in pieces (at UTF-8 boundaries), so memory stays
// bounded. Framing lines start with the marker: === RUN, PAUSE, CONT, NAME,
// ATTR (`=== ATTR  Test key value`, Go 1.25 t.Attr), ARTIFACTS, the
// --- PASS/FAIL/SKIP/BENCH reports and the final PASS or FAIL. Everything
// else is output, attributed to the test named last (as test2json does).
// Each line becomes an Event for the Handler; the Events' Raw bytes add up
// to the input exactly.
//
// NewParserFraming(h, FramingAny) also reads the lines without the marker
// that -test.v=true prints (and the --- FAIL and final lines of
// -test.v=false), until a line with the marker is seen, as test2json does.
// That output differs in what it leaves out: a subtest's --- line comes
// after its parent's, so a running subtest is taken as done when its
// parent prints === RUN for the next one (t.Run returns only when it has
// finished or paused); a benchmark prints its bare name instead of
// === RUN; and a final PASS or FAIL is only one when no test is running.
//
// The state answers, from any goroutine: Running (running tests without a
// running subtest: the candidates for the code executing now), Attr and
// Marked (attribute on the test or an ancestor), InTest / Snapshot
// (collection time: no test in progress). A subtest's parent is the longest
// unfinished test whose name is a '/'-prefix of it. Benchmarks never print
// --- PASS: one ends at the empty === NAME printed after its result, at the
// next benchmark that is not its sub-benchmark, or at the final line.
//
// # Renderer
//
// A Renderer consumes the same events and writes:
//
//   - ModeJSONFramed: the input byte for byte (test2json keeps working);
//   - ModeVerbose: what -test.v=true prints: markers dropped, the === NAME
//     lines that only test2json mode prints dropped, the === NAME lines the
//     chatty printer prints before a log line of another test put back, and
//     subtest reports moved under their parent's report, indented;
//   - ModeQuiet: what the binary prints without -v: logs of a test are kept
//     and printed, indented, under its --- FAIL line (inside the parent's
//     block for a subtest) or dropped when it passes; other output passes
//     at once.
//
// A stream whose framing lines come without the marker (FramingAny) is
// already in the form the user asked for (their own -test.v=true or false
// won): from its first such line on, the Renderer writes it as it is in any
// mode, with the --- lines of failed tests and the final line turned into
// FAIL and the verdict lines worked in under === NAME lines as needed.
//
// Golden tests check all three against a real fixture binary (tests,
// failures, skips, subtests, parallel subtests, t.Attr, long lines, output
// without newline, panics, os.Exit, examples, benchmarks).
//
// Limits of ModeQuiet (and ModeVerbose), which must guess from the framed
// stream what went through t.Log and what went straight to stdout:
//   - a line of a test's output is taken for t.Log output (held, and
//     dropped if the test passes) when it starts with t.Log's
//     "    file.go:N: " or continues such a line (eight spaces). fmt.Print
//     output that looks exactly like that is held too; t.Output() lines
//     (no file:line) appear at once where the binary would hold them; and
//     t.Log output whose line was begun by fmt.Print without newline is
//     recognized only by its "file.go:N: " prefix;
//   - output that the binary wrote to stderr is merged with stdout (the
//     binary merges them itself under -test.v=test2json);
//   - benchmarks without -v print their name, results and a --- BENCH block
//     in another layout; ModeQuiet renders them as in ModeVerbose except for
//     the bare name line (verbose benchmark output is reproduced exactly);
//   - output of a test written after its end (a leaked goroutine) or a
//     t.Log interleaved with another test's output by parallel tests is
//     attributed by the framing, which may differ from where the binary
//     would have buffered it.
//
// # Verdicts
//
// Fail(test, line) prints line as output of test (indented like t.Error;
// in ModeJSONFramed wrapped in framed === NAME lines so that test2json
// attributes it to the test and the following output to whoever had it),
// turns the test's --- PASS or --- SKIP and its parents' into --- FAIL, and
// the final PASS into FAIL. It reports false once the test's --- line has
// been written: then call FailPackage. FailPackage(line) prints line outside
// any test and turns the final PASS into FAIL; in ModeJSONFramed, when a
// test failed too, the package's lines are also the output of a failed
// test PackageTest before the final line (reporters such as gotestsum show
// a package's own output only when none of its tests failed). Verdict lines
// go out at the next line boundary. Failed tells whether the exit status
// must become 1.
//
// FailFast(stop) mirrors -test.failfast for verdicts: once the report of
// a test failed by a verdict is rendered, the next test start calls stop
// (to kill the binary) and is dropped with all that follows; the failed
// test's open parents get a synthesized --- FAIL, a note says what
// happened, and Close writes the final FAIL line.
//
// Wiring in the supervisor: one goroutine reads the pipe and writes into the
// Parser (NewParser(renderer.Handle)); nothing else must be done for output
// to flow. When a network call arrives:
//
//	release := renderer.Hold() // --- lines from now on wait
//	drainPipe()                 // everything the caller printed is parsed
//	snap := parser.Snapshot()   // Running, Collection; Marked for the marker
//	decide; if denied: renderer.Fail(test, line) for each candidate, or
//	    renderer.FailPackage(line) at collection time or if Fail is false
//	release()                   // held lines go out, PASS turned into FAIL
//
// "drainPipe" means: read until the pipe is empty and the bytes have been
// written into the Parser (e.g. the reading goroutine does non-blocking reads
// and reports when a read returns EAGAIN). The final PASS/FAIL line and
// everything after it wait for Renderer.Close, because TestMain can still
// make a collection-time attempt after m.Run; call Parser.Close and then
// Renderer.Close after the child has exited and the pipe reached EOF.
package teststream
