package teststream

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
)

// TestUnmarkedAsIs: what the binary printed with -test.v=true or without
// -v, read with FramingAny, is written back byte for byte in every mode:
// it is what the user asked for already.
func TestUnmarkedAsIs(t *testing.T) {
	for _, sc := range scenarios {
		for _, native := range sc.modes {
			if native == ModeJSONFramed {
				continue
			}
			in := readGolden(t, sc.name, native)
			if len(in) == 0 {
				continue // the feeders cannot cut nothing
			}
			for _, m := range allModes {
				for fi, f := range feeders {
					for _, size := range []int{maxLine, 64} {
						name := fmt.Sprintf("%s/%s-as-%s/%s/%d", sc.name, modeFiles[native], modeFiles[m], f.name, size)
						t.Run(name, func(t *testing.T) {
							if got := renderFramed(in, m, FramingAny, size, fi); !bytes.Equal(got, in) {
								t.Errorf("%s", lineDiff(got, in))
							}
						})
					}
				}
			}
		}
	}
}

// results parses a stream and returns every test it started and the
// result of every test it reported.
func results(in []byte, f Framing) (started []string, res map[string]string) {
	res = map[string]string{}
	p := NewParserFraming(func(e *Event) {
		switch e.Kind {
		case KindRun:
			started = append(started, e.Test)
		case KindEnd:
			res[e.Test] = e.Result
		}
	}, f)
	p.Write(in)
	p.Close()
	return started, res
}

// TestUnmarkedSameTests: the unmarked -v stream of a run names the same
// tests, started in the same order, with the same results, as the framed
// stream of the same run; the quiet stream the same failures.
func TestUnmarkedSameTests(t *testing.T) {
	for _, sc := range scenarios {
		startedJSON, resJSON := results(readGolden(t, sc.name, ModeJSONFramed), FramingMarked)
		for _, native := range sc.modes {
			if native == ModeJSONFramed {
				continue
			}
			started, res := results(readGolden(t, sc.name, native), FramingAny)
			want := maps.Clone(resJSON)
			wantStarted := startedJSON
			if native == ModeQuiet {
				maps.DeleteFunc(want, func(_, r string) bool { return r != "FAIL" })
				wantStarted = nil
			}
			if !slices.Equal(started, wantStarted) {
				t.Errorf("%s/%s: started %q, want %q", sc.name, modeFiles[native], started, wantStarted)
			}
			if !maps.Equal(res, want) {
				t.Errorf("%s/%s: results %v, want %v", sc.name, modeFiles[native], res, want)
			}
		}
	}
}

// verboseRun is -test.v=true output of sequential subtests, parallel
// subtests and a benchmark. Each log line names the tests that may be
// running when it is printed.
const verboseRun = `=== RUN   TestA
    a_test.go:1: TestA
--- PASS: TestA (0.00s)
=== RUN   TestSub
=== ATTR  TestSub nettrap network
    a_test.go:2: TestSub
=== RUN   TestSub/a
    a_test.go:3: TestSub/a
=== RUN   TestSub/b
    a_test.go:4: TestSub/b
=== RUN   TestSub/b/deep
    a_test.go:5: TestSub/b/deep
=== RUN   TestSub/c
    a_test.go:6: TestSub/c
PASS
=== RUN   TestSub/c/d
=== RUN   TestSub/c/d/e
    a_test.go:7: TestSub/c/d/e
=== RUN   TestSub/c/f
    a_test.go:8: TestSub/c/f
=== RUN   TestSub/g
    a_test.go:9: TestSub/g
--- PASS: TestSub (0.00s)
    --- PASS: TestSub/a (0.00s)
    --- PASS: TestSub/b (0.00s)
        --- PASS: TestSub/b/deep (0.00s)
    --- PASS: TestSub/c (0.00s)
        --- PASS: TestSub/c/d (0.00s)
            --- PASS: TestSub/c/d/e (0.00s)
        --- PASS: TestSub/c/f (0.00s)
    --- PASS: TestSub/g (0.00s)
=== RUN   TestPar
=== RUN   TestPar/x
=== PAUSE TestPar/x
=== RUN   TestPar/y
=== PAUSE TestPar/y
=== NAME  TestPar
    a_test.go:10: TestPar
=== CONT  TestPar/x
    a_test.go:11: TestPar/x
=== CONT  TestPar/y
    a_test.go:12: TestPar/x TestPar/y
--- PASS: TestPar (0.00s)
    --- PASS: TestPar/x (0.00s)
    --- PASS: TestPar/y (0.00s)
    a_test.go:13:
BenchmarkB
    a_test.go:14: BenchmarkB
BenchmarkB/s
    a_test.go:15: BenchmarkB/s
BenchmarkB/s-2   	      10	        35.30 ns/op
BenchmarkC
    a_test.go:16: BenchmarkC
BenchmarkC-2   	      10	        35.30 ns/op
PASS
`

// TestUnmarkedRunning: at every log line of the unmarked stream the
// parser knows which tests may be running, although a subtest's end is
// printed only after its parent's.
func TestUnmarkedRunning(t *testing.T) {
	for fi, f := range feeders {
		t.Run(f.name, func(t *testing.T) {
			var p *Parser
			checked := 0
			p = NewParserFraming(func(e *Event) {
				_, want, ok := strings.Cut(string(e.Raw), ".go:")
				if e.Kind != KindOutput || !ok || !e.LineEnd {
					return
				}
				_, want, _ = strings.Cut(strings.TrimSpace(want), ":")
				if got := strings.Join(p.Running(), " "); got != strings.TrimSpace(want) {
					t.Errorf("at %q: running %q", e.Raw, got)
				}
				checked++
			}, FramingAny)
			feeders[fi].feed(p, []byte(verboseRun))
			p.Close()
			if checked != 16 {
				t.Errorf("checked %d log lines, want 16", checked)
			}
			if !p.Marked("TestSub/c/d/e", "nettrap", "network") || p.Marked("TestPar", "nettrap", "network") {
				t.Error("the unmarked === ATTR line was not read")
			}
			if s := p.Snapshot(); s.Final != "PASS" || !s.Collection {
				t.Errorf("at the end: %+v", s)
			}
		})
	}
}

// TestUnmarkedVerdict: a verdict in an unmarked stream fails the test, its
// parents and the package, in the binary's own layout.
func TestUnmarkedVerdict(t *testing.T) {
	in := `=== RUN   TestSub
=== RUN   TestSub/a
    a_test.go:3: TestSub/a
=== RUN   TestSub/b
    a_test.go:4: TestSub/b
--- PASS: TestSub (0.00s)
    --- PASS: TestSub/a (0.00s)
    --- PASS: TestSub/b (0.00s)
PASS
`
	want := `=== RUN   TestSub
=== RUN   TestSub/a
    a_test.go:3: TestSub/a
    nettrap: denied
=== RUN   TestSub/b
=== NAME  TestSub/a
    nettrap: late
=== NAME  TestSub/b
    a_test.go:4: TestSub/b
--- FAIL: TestSub (0.00s)
    --- FAIL: TestSub/a (0.00s)
    --- PASS: TestSub/b (0.00s)
FAIL
`
	for _, m := range allModes {
		var out bytes.Buffer
		r := NewRenderer(&out, m)
		p := NewParserFraming(r.Handle, FramingAny)
		for line := range strings.Lines(in) {
			p.Write([]byte(line))
			switch line {
			case "    a_test.go:3: TestSub/a\n":
				if !r.Fail("TestSub/a", "nettrap: denied") {
					t.Fatal("Fail(TestSub/a) = false")
				}
			case "=== RUN   TestSub/b\n":
				// A parallel sibling may still be a candidate.
				r.Fail("TestSub/a", "nettrap: late")
			}
		}
		p.Close()
		r.Close()
		if got := out.String(); got != want {
			t.Errorf("mode %s: %s", modeFiles[m], lineDiff([]byte(got), []byte(want)))
		}
		if !r.Failed() {
			t.Errorf("mode %s: not failed", modeFiles[m])
		}
	}
}

// TestUnmarkedOnlyBeforeMarker: FramingAny reads unmarked lines only until
// it sees the marker; FramingMarked never.
func TestUnmarkedOnlyBeforeMarker(t *testing.T) {
	in := "=== RUN   TestX\n\x16=== RUN   TestY\n=== RUN   TestZ\n--- PASS: TestY (0.00s)\n"
	for f, want := range map[Framing][]string{FramingAny: {"TestX", "TestY"}, FramingMarked: {"TestY"}} {
		if started, _ := results([]byte(in), f); !slices.Equal(started, want) {
			t.Errorf("framing %d: started %q, want %q", f, started, want)
		}
	}
}

// TestUnmarkedOutputInTest: a test's own output that looks like the final
// line or a benchmark's name does not end or start anything.
func TestUnmarkedOutputInTest(t *testing.T) {
	in := "=== RUN   TestX\nPASS\nBenchmarkNothing\n    a_test.go:1: x\n"
	var kinds []Kind
	p := NewParserFraming(func(e *Event) { kinds = append(kinds, e.Kind) }, FramingAny)
	p.Write([]byte(in))
	p.Close()
	if want := []Kind{KindRun, KindOutput, KindOutput, KindOutput}; !slices.Equal(kinds, want) {
		t.Errorf("kinds %v, want %v", kinds, want)
	}
	if got := p.Running(); !slices.Equal(got, []string{"TestX"}) {
		t.Errorf("running %q", got)
	}
}

// FuzzUnmarked: any input without the marker, cut anywhere, read with
// FramingAny, comes out of every mode unchanged (it is written as it is),
// and the events' Raw bytes add up to it.
func FuzzUnmarked(f *testing.F) {
	for _, sc := range scenarios {
		for _, m := range sc.modes {
			if m != ModeJSONFramed {
				in := readGolden(f, sc.name, m)
				f.Add(in[:min(len(in), 2000)], uint8(7), uint8(64))
			}
		}
	}
	f.Add([]byte(verboseRun), uint8(3), uint8(16))
	f.Add([]byte("=== RUN   T\nPASS\n--- PASS: T (0.00s)\nBenchmarkX\nPASS"), uint8(1), uint8(8))
	f.Fuzz(func(t *testing.T, in []byte, chunk, size uint8) {
		if bytes.IndexByte(in, marker) >= 0 {
			return
		}
		n := max(int(chunk), 1)
		sz := max(int(size), 8)
		for _, m := range allModes {
			raw, out := passChunks(in, n, sz, m, FramingAny)
			if !bytes.Equal(raw, in) {
				t.Fatalf("Raw bytes %q != input %q", raw, in)
			}
			if !bytes.Equal(out, in) {
				t.Fatalf("mode %s: output %q != input %q", modeFiles[m], out, in)
			}
		}
	})
}
