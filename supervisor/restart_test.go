package supervisor_test

import (
	"fmt"
	"os"
	"syscall"
	"testing"
)

// TestRestartedConnect: without WAIT_KILLABLE_RECV (kernels before
// 5.19) a signal takes the target out of a connect nettrap has received
// and made, and the kernel restarts it; the restart, which finds the
// socket connected, must say what the kernel's own restarted connect
// says (0), not EISCONN. The victim's blocking connects run while it
// sends itself SIGURG without pause (the bench's raw connect once failed
// so under Go's own preemption).
func TestRestartedConnect(t *testing.T) {
	skipUnderPtrace(t, "stops its tracees: a signal does not restart a call it holds")
	ok := listen(t, "127.0.0.1")
	const n = 2000
	out, rep := confinedWith(t, []string{"NETTRAP_TEST_NO_KILLABLE_RECV=1"}, "connect-storm", fmt.Sprint(n), ok.addr)
	if rep.KillableRecv {
		t.Fatal("WAIT_KILLABLE_RECV was not withheld")
	}
	expect(t, out, fmt.Sprintf("ok:%d", n))
	if len(rep.Errors) > 0 {
		t.Errorf("supervisor errors: %v", rep.Errors)
	}
}

// connectStorm makes n blocking connects to addr while the process
// sends itself SIGURG without pause: "ok:N", or the first failure.
func connectStorm(n int, addr string) string {
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
				syscall.Kill(os.Getpid(), syscall.SIGURG)
			}
		}
	}()
	defer func() { close(stop); <-done }()
	for i := range n {
		if err := connectTo(addr); err != nil {
			return fmt.Sprintf("connect %d: %v", i, err)
		}
	}
	return fmt.Sprintf("ok:%d", n)
}
