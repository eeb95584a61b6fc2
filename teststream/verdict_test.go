package teststream

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

const blocked = "nettrap: Outbound network blocked: connect tcp 203.0.113.7:80 (external)"

// session feeds a recorded stream into a parser and renderer and lets a test
// act at chosen points.
type session struct {
	t   *testing.T
	in  []byte
	out bytes.Buffer
	p   *Parser
	r   *Renderer
}

func newSession(t *testing.T, scenario string, m Mode) *session {
	s := &session{t: t, in: readGolden(t, scenario, ModeJSONFramed)}
	s.r = NewRenderer(&s.out, m)
	s.p = NewParser(s.r.Handle)
	return s
}

// upTo feeds the input up to and including the first line containing sub.
func (s *session) upTo(sub string) {
	s.t.Helper()
	i := bytes.Index(s.in, []byte(sub))
	if i < 0 {
		s.t.Fatalf("input has no %q", sub)
	}
	j := i + bytes.IndexByte(s.in[i:], '\n') + 1
	s.p.Write(s.in[:j])
	s.in = s.in[j:]
}

func (s *session) finish() string {
	s.p.Write(s.in)
	s.in = nil
	s.p.Close()
	if err := s.r.Close(); err != nil {
		s.t.Fatal(err)
	}
	return s.out.String()
}

func TestFailSubtestAllModes(t *testing.T) {
	want := map[Mode]string{
		ModeVerbose: "=== RUN   TestPass\n    fixture_test.go:13: passing log\n--- PASS: TestPass (0.00s)\n" +
			"=== RUN   TestSkip\n    fixture_test.go:21: not today\n--- SKIP: TestSkip (0.00s)\n" +
			"=== RUN   TestSubPass\n=== RUN   TestSubPass/one\n    " + blocked + "\n    fixture_test.go:47: one\n" +
			"=== RUN   TestSubPass/two\n--- FAIL: TestSubPass (0.00s)\n    --- FAIL: TestSubPass/one (0.00s)\n" +
			"    --- PASS: TestSubPass/two (0.00s)\nFAIL\n",
		ModeQuiet: "--- FAIL: TestSubPass (0.00s)\n    --- FAIL: TestSubPass/one (0.00s)\n        " + blocked +
			"\n        fixture_test.go:47: one\nFAIL\n",
	}
	for _, m := range allModes {
		s := newSession(t, "allpass", m)
		s.upTo("=== RUN   TestSubPass/one")
		if !s.r.Fail("TestSubPass/one", blocked) {
			t.Fatal("Fail of a running test reported false")
		}
		got := s.finish()
		if m == ModeJSONFramed {
			checkJSON(t, got, blocked, "TestSubPass/one", "TestSubPass/one", "TestSubPass")
			continue
		}
		if got != want[m] {
			t.Errorf("mode %s:\n%s", modeFiles[m], lineDiff([]byte(got), []byte(want[m])))
		}
	}
}

// checkJSON runs the framed output through the go command's test2json and
// checks that line is output of test and that failed (and only they) fail.
func checkJSON(t *testing.T, framed, line, test string, failed ...string) {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go command not in PATH")
	}
	cmd := exec.Command("go", "tool", "test2json", "-p", "fixture")
	cmd.Stdin = strings.NewReader(framed)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("test2json: %v", err)
	}
	fails := map[string]bool{}
	var sawLine bool
	var final string
	for _, l := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
		var ev struct{ Action, Test, Output string }
		if err := json.Unmarshal(l, &ev); err != nil {
			t.Fatalf("test2json output %q: %v", l, err)
		}
		switch {
		case ev.Action == "output" && strings.Contains(ev.Output, line):
			sawLine = true
			if ev.Test != test {
				t.Errorf("test2json attributes %q to test %q, want %q", ev.Output, ev.Test, test)
			}
		case ev.Action == "fail" && ev.Test != "":
			fails[ev.Test] = true
		case (ev.Action == "fail" || ev.Action == "pass") && ev.Test == "":
			final = ev.Action
		}
	}
	if !sawLine {
		t.Errorf("test2json shows no output %q:\n%s", line, out)
	}
	for _, f := range failed {
		if !fails[f] {
			t.Errorf("test2json does not fail %s:\n%s", f, out)
		}
		delete(fails, f)
	}
	for f := range fails {
		t.Errorf("test2json fails %s too", f)
	}
	if final != "fail" {
		t.Errorf("package result %q, want fail", final)
	}
}

// A verdict for a test other than the one the stream names at that moment
// must be attributed to its test, and the following output to the original.
func TestFailOtherTestKeepsAttribution(t *testing.T) {
	s := newSession(t, "parallel", ModeJSONFramed)
	s.upTo("=== PAUSE TestPar/y")
	s.upTo("=== NAME  TestPar")
	if !s.r.Fail("TestPar/x", blocked) {
		t.Fatal("Fail of a paused test reported false")
	}
	got := s.finish()
	checkJSON(t, got, blocked, "TestPar/x", "TestPar/x", "TestPar")
	checkJSON(t, got, "par parent", "TestPar", "TestPar/x", "TestPar")

	s = newSession(t, "parallel", ModeVerbose)
	s.upTo("=== PAUSE TestPar/y")
	s.upTo("=== NAME  TestPar")
	s.r.Fail("TestPar/x", blocked)
	got = s.finish()
	wantPart := "=== NAME  TestPar/x\n    " + blocked + "\n=== NAME  TestPar\n    fixture_test.go:58: par parent\n"
	if !strings.Contains(got, wantPart) {
		t.Errorf("verbose output lacks %q:\n%s", wantPart, got)
	}
	if !strings.Contains(got, "--- FAIL: TestPar (0.00s)\n    --- FAIL: TestPar/x (0.00s)\n    --- PASS: TestPar/y") {
		t.Errorf("verbose reports wrong:\n%s", got)
	}
}

// Hold keeps a --- line back until the verdict is in; a test whose end was
// written can no longer be failed.
func TestHoldTurnsPassIntoFail(t *testing.T) {
	for _, m := range allModes {
		s := newSession(t, "basic", m)
		s.upTo("=== RUN   TestSkip")
		release := s.r.Hold()
		s.upTo("--- SKIP: TestSkip")
		s.upTo("=== RUN   TestNoNewline")
		if strings.Contains(s.out.String(), "TestSkip (") {
			t.Fatalf("mode %s: end line written during a hold:\n%s", modeFiles[m], s.out.String())
		}
		if !s.r.Fail("TestSkip", blocked) {
			t.Fatal("Fail of a test whose end is held reported false")
		}
		release()
		release() // idempotent
		if m != ModeQuiet && !strings.Contains(s.out.String(), "TestSkip (") {
			t.Fatalf("mode %s: end line still held after release:\n%s", modeFiles[m], s.out.String())
		}
		if s.r.Fail("TestSkip", blocked) {
			t.Error("Fail after the end was written reported true")
		}
		if s.r.Fail("TestNope", blocked) {
			t.Error("Fail of an unknown test reported true")
		}
		got := s.finish()
		switch m {
		case ModeJSONFramed:
			checkJSON(t, got, blocked, "TestSkip", "TestSkip", "TestFail")
		default:
			want := "--- FAIL: TestSkip (0.00s)\n    fixture_test.go:21: not today\n    " + blocked + "\n"
			if m == ModeVerbose {
				want = "    fixture_test.go:21: not today\n    " + blocked + "\n--- FAIL: TestSkip (0.00s)\n"
			}
			if !strings.Contains(got, want) || !strings.HasSuffix(got, "FAIL\n") {
				t.Errorf("mode %s: output lacks %q:\n%s", modeFiles[m], want, got)
			}
		}
	}
}

// A collection-time verdict after the binary printed PASS (TestMain after
// m.Run) still turns the final line into FAIL, with the line before it.
func TestFailPackageAfterFinalLine(t *testing.T) {
	for _, m := range allModes {
		s := newSession(t, "allpass", m)
		s.p.Write(s.in)
		s.in = nil
		if st := s.p.Snapshot(); !st.Collection || st.Final != "PASS" {
			t.Fatalf("snapshot after PASS: %+v", st)
		}
		if strings.Contains(s.out.String(), "PASS\n") && m == ModeQuiet {
			t.Fatal("final line written before Close")
		}
		s.r.FailPackage(blocked + " (collection)")
		got := s.finish()
		if !strings.HasSuffix(got, blocked+" (collection)\n"+string(framing(m))+"FAIL\n") {
			t.Errorf("mode %s: tail wrong:\n%q", modeFiles[m], got)
		}
		if m == ModeJSONFramed {
			checkJSON(t, got, blocked, "")
		}
	}
}

func framing(m Mode) []byte {
	if m == ModeJSONFramed {
		return []byte{marker}
	}
	return nil
}

// A test that never ends (os.Exit) still shows its verdict.
func TestFailUnfinishedTest(t *testing.T) {
	for _, m := range allModes {
		s := newSession(t, "exit", m)
		s.upTo("exiting")
		if !s.r.Fail("TestExit", blocked) {
			t.Fatal("Fail reported false")
		}
		got := s.finish()
		if !strings.Contains(got, blocked+"\n") {
			t.Errorf("mode %s: verdict missing:\n%s", modeFiles[m], got)
		}
		if !s.r.Failed() {
			t.Error("Failed() is false after a verdict")
		}
	}
}

// A verdict for a test whose output is in the middle of a line waits for
// the line to end.
func TestFailMidLine(t *testing.T) {
	var out bytes.Buffer
	r := NewRenderer(&out, ModeVerbose)
	p := NewParser(r.Handle)
	p.Write([]byte("\x16=== RUN   TestA\nhalf a "))
	// The partial line is still buffered by the parser, so the renderer is
	// at a line start; feed a piece too long to buffer instead.
	r.Fail("TestA", blocked)
	p.Write([]byte("line\n\x16--- PASS: TestA (0.00s)\n\x16PASS\n"))
	p.Close()
	r.Close()
	want := "=== RUN   TestA\n    " + blocked + "\nhalf a line\n--- FAIL: TestA (0.00s)\nFAIL\n"
	if out.String() != want {
		t.Errorf("%s", lineDiff(out.Bytes(), []byte(want)))
	}

	out.Reset()
	r = NewRenderer(&out, ModeVerbose)
	p = newParser(r.Handle, 32)
	p.Write([]byte("\x16=== RUN   TestA\n" + strings.Repeat("x", 40)))
	r.Fail("TestA", blocked)
	p.Write([]byte("y\n\x16--- PASS: TestA (0.00s)\n"))
	p.Close()
	r.Close()
	want = "=== RUN   TestA\n" + strings.Repeat("x", 40) + "y\n    " + blocked + "\n--- FAIL: TestA (0.00s)\n"
	if out.String() != want {
		t.Errorf("%s", lineDiff(out.Bytes(), []byte(want)))
	}
}

// A hold taken when a call arrives queues the previous test's end and what
// follows; the verdict is about the call, made after all of that, so it
// must come out behind it, under the test that made the call.
func TestFailBehindHeldLines(t *testing.T) {
	for _, m := range allModes {
		s := newSession(t, "allpass", m)
		s.upTo("fixture_test.go:13: passing log")
		release := s.r.Hold()
		s.upTo("=== RUN   TestSkip")
		if !s.r.Fail("TestSkip", blocked) {
			t.Fatal("Fail of a running test reported false")
		}
		release()
		got := s.finish()
		switch m {
		case ModeJSONFramed:
			checkJSON(t, got, blocked, "TestSkip", "TestSkip")
			if i, j := strings.Index(got, "=== RUN   TestSkip"), strings.Index(got, blocked); j < i {
				t.Errorf("framed: verdict before the test's RUN line:\n%s", got)
			}
		case ModeVerbose:
			want := "--- PASS: TestPass (0.00s)\n=== RUN   TestSkip\n    " + blocked + "\n    fixture_test.go:21: not today\n--- FAIL: TestSkip (0.00s)\n"
			if !strings.Contains(got, want) {
				t.Errorf("verbose output lacks %q:\n%s", want, got)
			}
		case ModeQuiet:
			want := "--- FAIL: TestSkip (0.00s)\n    " + blocked + "\n    fixture_test.go:21: not today\nFAIL\n"
			if got != want {
				t.Errorf("quiet:\n%s", lineDiff([]byte(got), []byte(want)))
			}
		}
	}
}
