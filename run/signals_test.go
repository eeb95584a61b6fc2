package run

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// A signal nettrap gets reaches the forwarding target, and stop ends the
// forwarding goroutine (it used to leak in confined runs).
func TestForwarder(t *testing.T) {
	fw := catchSignals()
	got := make(chan syscall.Signal, 1)
	fw.forward(func(sig syscall.Signal) { got <- sig })
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	select {
	case sig := <-got:
		if sig != syscall.SIGUSR1 {
			t.Errorf("forwarded %v, want SIGUSR1", sig)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("SIGUSR1 was not forwarded")
	}
	fw.stop()
	select {
	case <-fw.exited:
	default:
		t.Error("stop returned with the forwarding goroutine still running")
	}
}

// A forwarder stopped before forwarding (the command did not start)
// ends cleanly.
func TestForwarderStopUnstarted(t *testing.T) {
	fw := catchSignals()
	fw.stop()
	if fw.exited != nil {
		t.Error("a goroutine was started without forward")
	}
}

// startAndWait gives the command's status, passes on a signal to the
// command, and reports a command that cannot start as an error.
func TestStartAndWait(t *testing.T) {
	cmd := exec.Command("sh", "-c", "exit 3")
	if st, err := startAndWait(cmd, nil, toProcess(cmd), nil); st != 3 || err != nil {
		t.Errorf("exit 3: status %d, error %v", st, err)
	}
	// nettrap gets SIGTERM as soon as the command has started: the
	// command gets it (status 128+15) instead of sleeping on.
	cmd = exec.Command("sleep", "60")
	st, err := startAndWait(cmd, nil, toProcess(cmd), func(*os.Process) {
		syscall.Kill(syscall.Getpid(), syscall.SIGTERM)
	})
	if st != 128+int(syscall.SIGTERM) || err != nil {
		t.Errorf("SIGTERM to nettrap: status %d, error %v; want the command killed by it", st, err)
	}
	cmd = exec.Command("/nonexistent/command")
	if _, err := startAndWait(cmd, nil, toProcess(cmd), nil); err == nil || execStatus(err) != ExitNotFound {
		t.Errorf("a missing command: error %v (status %d), want not found", err, execStatus(err))
	}
}
