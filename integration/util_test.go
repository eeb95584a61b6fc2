package integration

import (
	"net"
	"os/exec"
	"testing"
	"time"

	"github.com/nettrap/nettrap/integration/internal/harness"
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

// waitAccepted waits for listenOnce's connection; the timeout only bounds a
// broken run.
func waitAccepted(t *testing.T, ch <-chan string) string {
	t.Helper()
	select {
	case a := <-ch:
		return a
	case <-time.After(harness.Timeout):
		t.Fatal("listener accepted nothing")
		return ""
	}
}

func runExit(prog string, args ...string) error {
	return exec.Command(prog, args...).Run()
}
