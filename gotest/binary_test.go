package gotest

import (
	"bytes"
	"io"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// Finish ends Run's poll even when a leftover subprocess of the binary
// holds the pipe open (no EOF ever comes).
func TestRunEndsAtFinish(t *testing.T) {
	f := newTrackerFixture(t)
	done := make(chan error, 1)
	go func() { done <- f.tr.Run() }()
	f.emit(mark + "=== RUN   TestA")
	// Wait until Run has its eventfd: it then polls, or is about to.
	for polling := false; !polling; {
		f.tr.readMu.Lock()
		polling = f.tr.wake >= 0
		f.tr.readMu.Unlock()
		time.Sleep(time.Millisecond)
	}
	// f.w stays open, as a leftover child would hold it.
	if _, err := f.tr.Finish(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run still in poll after Finish, with the pipe held open")
	}
	f.tr.readMu.Lock()
	defer f.tr.readMu.Unlock()
	if f.tr.wake != -1 {
		t.Errorf("Run left its eventfd %d open", f.tr.wake)
	}
}

// Run started after Finish returns at once.
func TestRunAfterFinish(t *testing.T) {
	f := newTrackerFixture(t)
	if _, err := f.tr.Finish(); err != nil {
		t.Fatal(err)
	}
	if err := f.tr.Run(); err != nil {
		t.Errorf("Run after Finish: %v", err)
	}
}

// The -failfast stop reaches the binary whether it comes before the
// starter has handed over the process (the binary wrote before
// cmd.Start returned) or after.
func TestFailFastStopsStartedProcess(t *testing.T) {
	for _, early := range []bool{true, false} {
		var p process
		stop := p.stop(io.Discard)
		if early {
			stop()
		}
		cmd := exec.Command("sleep", "60")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		p.started(cmd.Process)
		if !early {
			stop()
		}
		cmd.Wait()
		ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
		if !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Errorf("stop early=%v: the process ended with %v, want SIGKILL", early, cmd.ProcessState)
		}
	}
}

// A stop after the binary exited and was reaped says nothing.
func TestFailFastStopAfterExit(t *testing.T) {
	var p process
	var msgs bytes.Buffer
	stop := p.stop(&msgs)
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	p.started(cmd.Process)
	stop()
	if msgs.Len() > 0 {
		t.Errorf("stop of a finished process: %q", msgs.String())
	}
}
