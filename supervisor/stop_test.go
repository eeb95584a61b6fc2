package supervisor_test

import (
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// A descendant that outlives the command keeps the filter in use, so the
// kernel never tells the receivers (blocked in RECV) that the last target
// is gone: Wait must still return, and the stray's calls then fail with
// ENOSYS (closed, not open), while nothing reaches the listener.
func TestWaitReturnsWithStrayDescendant(t *testing.T) {
	ok := listen(t, "127.0.0.1")
	dir := t.TempDir()
	cmd, report := supervisorCmd(t, "stray", dir, ok.addr)
	done := make(chan error, 1)
	var out []byte
	go func() {
		var err error
		out, err = cmd.Output()
		done <- err
	}()
	t.Cleanup(func() {
		if b, err := os.ReadFile(dir + "/ready"); err == nil {
			if pid, err := strconv.Atoi(string(b)); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("supervisor role: %v", err)
		}
	case <-time.After(20 * time.Second): // bounds a broken run only
		cmd.Process.Kill()
		t.Fatal("Wait did not return while a stray descendant held the filter")
	}
	if string(out) != "ok\n" {
		t.Fatalf("victim printed %q, want ok", out)
	}
	readReport(t, report)
	if !waitFile(dir + "/ready") {
		t.Fatal("the stray never started")
	}
	expectCutOff(t, ok, dir, "the stray, after the session ended")
}

// expectCutOff lets a waiting wait-connect victim in dir connect to ok,
// and checks that the call failed with ENOSYS (no supervisor any more)
// and reached nothing.
func expectCutOff(t *testing.T, ok *recorder, dir, who string) {
	t.Helper()
	os.WriteFile(dir+"/go", nil, 0o644)
	if !waitFile(dir + "/result") {
		t.Fatalf("%s: the victim never reported", who)
	}
	if got, _ := os.ReadFile(dir + "/result"); string(got) != "ENOSYS" {
		t.Fatalf("%s: the victim's connect said %q, want ENOSYS", who, got)
	}
	if c, _ := ok.counts(t, 0, 0); c != 0 {
		t.Errorf("%s: the listener saw %d connections", who, c)
	}
}
