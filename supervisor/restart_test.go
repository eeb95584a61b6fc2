package supervisor_test

import (
	"fmt"
	"os"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestRestartedConnect: without WAIT_KILLABLE_RECV (kernels before
// 5.19) a signal takes the target out of a connect nettrap has received
// and made, and the kernel restarts it; the restart, which finds the
// socket connected, must say what the kernel's own restarted connect
// says (0), not EISCONN. The victim's blocking connects run while it
// sends itself SIGURG without pause (the bench's raw connect once failed
// so under Go's own preemption).
func TestRestartedConnect(t *testing.T) {
	stormWithoutKillableRecv(t, "connect-storm", listen(t, "127.0.0.1"))
}

// stormN is how many calls a storm victim makes.
const stormN = 2000

// stormWithoutKillableRecv runs victim op (connect-storm, sendto-storm)
// for stormN calls to ok, with WAIT_KILLABLE_RECV withheld: each call
// must succeed, and the supervisor report no error.
func stormWithoutKillableRecv(t *testing.T, op string, ok *recorder) {
	t.Helper()
	skipUnderPtrace(t, "stops its tracees: a signal does not restart a call it holds")
	out, rep := confinedWith(t, []string{"NETTRAP_TEST_NO_KILLABLE_RECV=1"}, op, fmt.Sprint(stormN), ok.addr)
	if rep.KillableRecv {
		t.Fatal("WAIT_KILLABLE_RECV was not withheld")
	}
	expect(t, out, fmt.Sprintf("ok:%d", stormN))
	if len(rep.Errors) > 0 {
		t.Errorf("supervisor errors: %v", rep.Errors)
	}
}

// TestRestartedSend: the same for sends: a datagram nettrap sent for a
// call whose answer a signal took away is not sent again when the call
// restarts (the lost answer is replayed). Under this storm the restarts
// without the replay sent 31 to 234 datagrams twice per 2000; with it, 0
// or 1: the kernel before 5.19 can also take an answer away after
// SECCOMP_IOCTL_NOTIF_SEND said it was delivered (the signal woke the
// target first), which nettrap cannot see (docs/limits.md). So the bound
// is n/200.
func TestRestartedSend(t *testing.T) {
	ok := listen(t, "127.0.0.1")
	stormWithoutKillableRecv(t, "sendto-storm", ok)
	if _, grams := ok.counts(t, 0, 1); grams > stormN+stormN/200 {
		t.Errorf("%d datagrams arrived for %d sends: restarted sends went out again", grams, stormN)
	}
}

// TestRestartedSendmsg is TestRestartedSend through sendmsg, whose
// payload nettrap reads after it checked the notification (sendto's comes
// with the address): a signal between the two leaves a call nettrap has
// not made, and its restart must be made, not answered EPERM.
func TestRestartedSendmsg(t *testing.T) {
	ok := listen(t, "127.0.0.1")
	stormWithoutKillableRecv(t, "sendmsg-storm", ok)
	if _, grams := ok.counts(t, 0, 1); grams > stormN+stormN/200 {
		t.Errorf("%d datagrams arrived for %d sends: restarted sends went out again", grams, stormN)
	}
}

// connectStorm makes n blocking connects to addr while the process
// sends itself SIGURG without pause: "ok:N", or the first failure.
func connectStorm(n int, addr string) string {
	return underSignals(func() string {
		for i := range n {
			if err := connectTo(addr); err != nil {
				return fmt.Sprintf("connect %d: %v", i, err)
			}
		}
		return fmt.Sprintf("ok:%d", n)
	})
}

// sendtoStorm sends n datagrams to addr from one unconnected socket
// while the process sends itself SIGURG without pause; with sendmsg, of
// 4 KiB each through sendmsg.
func sendtoStorm(n int, addr string, sendmsg bool) string {
	sa, fam := sockaddr(addr)
	fd, err := unix.Socket(fam, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err.Error()
	}
	defer unix.Close(fd)
	return underSignals(func() string {
		big := make([]byte, 4096)
		for i := range n {
			var err error
			if sendmsg {
				_, err = unix.SendmsgN(fd, big, nil, sa, 0)
			} else {
				err = unix.Sendto(fd, []byte(fmt.Sprint(i)), 0, sa)
			}
			if err != nil {
				return fmt.Sprintf("send %d: %v", i, err)
			}
		}
		return fmt.Sprintf("ok:%d", n)
	})
}

// underSignals runs f while the process sends itself SIGURG without
// pause.
func underSignals(f func() string) string {
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
	return f()
}
