package integration

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"testing"
	"time"
)

// onceListener is a listener that accepts one connection and reports the
// local address it was accepted on.
type onceListener struct {
	addr     string // what to connect to
	accepted <-chan string
}

// listenOnce listens on network/addr (":0" ports welcome) until t ends.
func listenOnce(t *testing.T, network, addr string) onceListener {
	t.Helper()
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	ch := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		ch <- c.LocalAddr().String()
		c.Close()
	}()
	return onceListener{addr: ln.Addr().String(), accepted: ch}
}

// pause waits a little between polls of something outside our control.
func pause(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Millisecond):
	}
}

// waitAccepted waits for listenOnce's connection; the timeout only bounds a
// broken run.
func waitAccepted(t *testing.T, ch <-chan string) string {
	t.Helper()
	select {
	case a := <-ch:
		return a
	case <-time.After(runTimeout):
		t.Fatal("listener accepted nothing")
		return ""
	}
}

func runExit(prog string, args ...string) error {
	return exec.Command(prog, args...).Run()
}

// exitCode is the exit status in err (0 for nil, -1 when not an exit).
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// openTempDir is a temporary directory with mode perm, removed after the
// test: not under t.TempDir, whose parent is 0700, so that nobody can
// enter it.
func openTempDir(t *testing.T, prefix string, perm os.FileMode) string {
	t.Helper()
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, perm); err != nil {
		t.Fatal(err)
	}
	return dir
}

// matchGolden compares got with the golden file, first rewriting it with
// got when update is set (the flag named flag), and reports a difference
// as what differs, with more (the run's whole output, say) after it.
func matchGolden(t testing.TB, golden, got string, update bool, flag, what, more string) {
	t.Helper()
	if update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("%s differ from %s (-%s rewrites it)\ngot:\n%s\nwant:\n%s%s", what, golden, flag, got, want, more)
	}
}
