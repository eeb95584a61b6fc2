package procfs

import (
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A signal sent to a thread that blocks it shows in that thread's
// Private and Blocked masks.
func TestThreadSignals(t *testing.T) {
	signal.Notify(make(chan os.Signal, 1), unix.SIGUSR2)
	defer signal.Reset(unix.SIGUSR2)
	type result struct {
		tid int
		st  Signals
		ok  bool
	}
	done := make(chan result)
	go func() {
		// The thread is left to die with the signal pending in it.
		runtime.LockOSThread()
		var set unix.Sigset_t
		set.Val[0] = 1 << (unix.SIGUSR2 - 1)
		if err := unix.PthreadSigmask(unix.SIG_BLOCK, &set, nil); err != nil {
			done <- result{}
			return
		}
		tid := unix.Gettid()
		unix.Tgkill(os.Getpid(), tid, unix.SIGUSR2)
		st, ok := ThreadSignals(tid)
		done <- result{tid, st, ok}
	}()
	r := <-done
	bit := uint64(1) << (unix.SIGUSR2 - 1)
	if !r.ok || r.st.Tgid != os.Getpid() || r.st.Private&bit == 0 || r.st.Blocked&bit == 0 {
		t.Fatalf("ThreadSignals(%d) = %+v, %v: want tgid %d and SIGUSR2 pending and blocked", r.tid, r.st, r.ok, os.Getpid())
	}
	tids, err := Threads(os.Getpid())
	if err != nil || !slices.Contains(tids, unix.Gettid()) {
		t.Errorf("Threads(self) = %v, %v: want this thread %d among them", tids, err, unix.Gettid())
	}
}

func TestRunning(t *testing.T) {
	if !Running(os.Getpid()) {
		t.Error("Running(self) = false")
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skip("no true:", err)
	}
	if Running(cmd.Process.Pid) {
		t.Errorf("Running(%d) = true for a reaped child", cmd.Process.Pid)
	}
}

func TestStopped(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Skip("no sleep:", err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	if Stopped(cmd.Process.Pid) {
		t.Errorf("Stopped(%d) = true for a running child", cmd.Process.Pid)
	}
	if err := cmd.Process.Signal(unix.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !Stopped(cmd.Process.Pid) && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if !Stopped(cmd.Process.Pid) {
		t.Errorf("Stopped(%d) = false for a child stopped by SIGSTOP", cmd.Process.Pid)
	}
}
