package teststream

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

const wouldBlock = "nettrap: audit: would block: connect tcp 203.0.113.7:80 (external) during TestPar/x"

// Say puts a line in a test's output and fails nothing: with -json the
// go command's test2json attributes it to the test (another one than
// the stream names at that moment), and every test passes; without -v
// it is a line of the package, shown at once; a test whose end is
// written cannot take it.
func TestSayFailsNothing(t *testing.T) {
	s := newSession(t, "parallel", ModeJSONFramed)
	s.upTo("=== PAUSE TestPar/y")
	s.upTo("=== NAME  TestPar")
	if !s.r.Say("TestPar/x", wouldBlock) {
		t.Fatal("Say to a paused test reported false")
	}
	got := s.finish()
	if s.r.Failed() {
		t.Error("Say failed the run")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go command not in PATH")
	}
	cmd := exec.Command("go", "tool", "test2json", "-p", "fixture")
	cmd.Stdin = strings.NewReader(got)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("test2json: %v", err)
	}
	saw := false
	for _, l := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
		var ev struct{ Action, Test, Output string }
		if err := json.Unmarshal(l, &ev); err != nil {
			t.Fatalf("test2json output %q: %v", l, err)
		}
		switch {
		case ev.Action == "output" && strings.Contains(ev.Output, wouldBlock):
			saw = true
			if ev.Test != "TestPar/x" {
				t.Errorf("test2json attributes the line to %q, want TestPar/x", ev.Test)
			}
		case ev.Action == "fail":
			t.Errorf("test2json: %s fails", l)
		}
	}
	if !saw {
		t.Errorf("test2json shows no line %q:\n%s", wouldBlock, out)
	}

	s = newSession(t, "parallel", ModeQuiet)
	s.upTo("=== PAUSE TestPar/y")
	if !s.r.Say("TestPar/x", wouldBlock) {
		t.Fatal("quiet: Say to a paused test reported false")
	}
	if got := s.out.String(); got != wouldBlock+"\n" {
		t.Errorf("quiet: %q written at once, want the line as the package's", got)
	}
	if got := s.finish(); strings.Contains(got, "FAIL") || s.r.Failed() {
		t.Errorf("quiet: Say failed something:\n%s", got)
	}

	s = newSession(t, "allpass", ModeVerbose)
	s.upTo("--- PASS: TestPass")
	if s.r.Say("TestPass", wouldBlock) || s.r.Say("", wouldBlock) {
		t.Error("Say to an ended test (or none) reported true")
	}
}
