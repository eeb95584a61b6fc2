package integration

import (
	"errors"
	"net"
	"os/exec"
	"testing"
	"time"
)

// acceptOne listens on network/addr and reports the first accepted
// connection's local address on the returned channel.
func acceptOne(t *testing.T, network, addr string) <-chan string {
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
	return ch
}

// waitAccepted waits for acceptOne's connection; the timeout only bounds a
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
