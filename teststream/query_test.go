package teststream

import (
	"bytes"
	"slices"
	"sync"
	"testing"
)

func TestMarkedInheritance(t *testing.T) {
	p := NewParser(nil)
	in := readGolden(t, "attr", ModeJSONFramed)
	i := bytes.Index(in, []byte("sub of marked"))
	p.Write(in[:i])
	if got := p.Running(); !slices.Equal(got, []string{"TestAttr/sub"}) {
		t.Errorf("Running() = %q, want [TestAttr/sub]", got)
	}
	if !p.Marked("TestAttr/sub", "nettrap", "network") {
		t.Error("subtest of a marked test is not marked")
	}
	if p.Marked("TestAttr/sub", "nettrap", "other") || p.Marked("TestNope", "nettrap", "network") {
		t.Error("Marked matches a wrong value or an unknown test")
	}
	if v, ok := p.Attr("TestAttr", "owner"); !ok || v != "some one" {
		t.Errorf("Attr(owner) = %q, %v; want value with a space", v, ok)
	}
	if _, ok := p.Attr("TestAttr/sub", "nettrap"); ok {
		t.Error("Attr must not inherit")
	}
	if !p.InTest() {
		t.Error("InTest() false inside a test")
	}
	p.Write(in[i:])
	p.Close()
	if p.InTest() || len(p.Running()) != 0 {
		t.Errorf("after the run: InTest %v, Running %q", p.InTest(), p.Running())
	}
	if ti, ok := p.Test("TestAttr/sub"); !ok || ti.State != Done || ti.Result != "PASS" || ti.Parent != "TestAttr" {
		t.Errorf("Test(TestAttr/sub) = %+v, %v", ti, ok)
	}
}

func TestCollectionTime(t *testing.T) {
	p := NewParser(nil)
	if s := p.Snapshot(); !s.Collection || s.Started {
		t.Errorf("before any test: %+v", s)
	}
	p.Write([]byte("init output\n\x16=== RUN   TestA\n"))
	if s := p.Snapshot(); s.Collection || !slices.Equal(s.Running, []string{"TestA"}) {
		t.Errorf("in TestA: %+v", s)
	}
	p.Write([]byte("\x16=== RUN   TestA/p\n\x16=== PAUSE TestA/p\n\x16=== NAME  TestA\n"))
	if s := p.Snapshot(); !slices.Equal(s.Running, []string{"TestA"}) || len(s.Active) != 2 {
		t.Errorf("with a paused subtest: %+v", s)
	}
	p.Write([]byte("\x16=== CONT  TestA/p\n"))
	if got := p.Running(); !slices.Equal(got, []string{"TestA/p"}) {
		t.Errorf("Running() = %q after CONT", got)
	}
	p.Write([]byte("\x16--- PASS: TestA/p (0.00s)\n\x16--- PASS: TestA (0.00s)\n\x16=== NAME  \n"))
	if s := p.Snapshot(); !s.Collection || !s.Started || s.Final != "" {
		t.Errorf("between tests: %+v", s)
	}
}

// The supervisor queries the parser and injects verdicts from other
// goroutines while the stream is being written; run with -race.
func TestConcurrentUse(t *testing.T) {
	in := readGolden(t, "subtests", ModeJSONFramed)
	var out bytes.Buffer
	r := NewRenderer(&out, ModeVerbose)
	p := NewParser(r.Handle)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			release := r.Hold()
			for _, name := range p.Running() {
				p.Marked(name, "nettrap", "network")
				r.Fail(name, blocked)
			}
			_ = p.Snapshot()
			release()
		}
	}()
	feedChunks(p, in, 0, 3)
	p.Close()
	close(stop)
	wg.Wait()
	r.Close()
	if !bytes.HasSuffix(out.Bytes(), []byte("FAIL\n")) {
		t.Errorf("output does not end in FAIL:\n%s", out.String())
	}
}
