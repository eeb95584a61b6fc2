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
//
// With the loop's goroutine started late, the command is gone before it
// first runs: the kick counts the receivers when it runs, and a receiver
// counted only later waited in RECV for good (it hung one
// `nettrap -- /bin/true` in a few hundred on a loaded machine, the reaper
// holding the filter).
func TestWaitReturnsWithStrayDescendant(t *testing.T) {
	t.Run("loop running", func(t *testing.T) { testStray(t, false) })
	t.Run("loop starting late", func(t *testing.T) { testStray(t, true) })
}

func testStray(t *testing.T, late bool) {
	ok := listen(t, "127.0.0.1")
	dir := t.TempDir()
	cmd, report := supervisorCmd(t, "stray", dir, ok.addr)
	if late {
		cmd.Env = append(cmd.Env, lateLoopEnv+"=1")
	}
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
	if underPtrace() {
		// Killed with the tracer (PTRACE_O_EXITKILL), maybe before it
		// even started: cut off all the same.
		expectCutOff(t, ok, dir, "the stray, after the session ended")
		return
	}
	if !waitFile(dir + "/ready") {
		t.Fatal("the stray never started")
	}
	expectCutOff(t, ok, dir, "the stray, after the session ended")
}

// expectCutOff lets a waiting wait-connect victim in dir connect to ok,
// and checks that the call failed with ENOSYS (no supervisor any more)
// and reached nothing.
//
// Under the ptrace engine the tracer's death kills the victim instead
// (PTRACE_O_EXITKILL): it must then be dead, or have got ENOSYS.
func expectCutOff(t *testing.T, ok *recorder, dir, who string) {
	t.Helper()
	os.WriteFile(dir+"/go", nil, 0o644)
	if underPtrace() && !victimReported(dir) {
		if c, _ := ok.counts(t, 0, 0); c != 0 {
			t.Errorf("%s: the listener saw %d connections", who, c)
		}
		return
	}
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

// victimReported waits for a wait-connect victim in dir to write its
// result, and tells whether it did: false when it is dead without one,
// or never started (killed with the tracer before it could say so).
func victimReported(dir string) bool {
	start := time.Now()
	for deadline := start.Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(dir + "/result"); err == nil {
			return true
		}
		b, err := os.ReadFile(dir + "/ready")
		if err != nil {
			if time.Since(start) > 2*time.Second {
				return false
			}
			continue
		}
		if pid, err := strconv.Atoi(string(b)); err == nil && !alive(pid) {
			_, err := os.Stat(dir + "/result")
			return err == nil
		}
	}
	return true // let the caller's own wait report it
}
