package supervisor_test

import (
	"os"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// signalStormEnv, in the supervisor role, makes it send SIGURG (which the
// Go runtime takes in stride) to each of its own threads, over and over,
// until the session ends: a thread of the supervisor waiting in an ioctl
// is then interrupted, as a SIGCHLD or a forwarded signal may do.
const signalStormEnv = "NETTRAP_SUPERVISOR_TEST_SIGNAL_STORM"

// startSignalStorm starts the storm if asked for; the returned func ends it.
func startSignalStorm() func() {
	if os.Getenv(signalStormEnv) == "" {
		return func() {}
	}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		pid := os.Getpid()
		for {
			select {
			case <-stop:
				return
			default:
			}
			tasks, _ := os.ReadDir("/proc/self/task")
			for _, e := range tasks {
				if tid, err := strconv.Atoi(e.Name()); err == nil && tid != unix.Gettid() {
					unix.Tgkill(pid, tid, unix.SIGURG)
				}
			}
		}
	}()
	return func() { close(stop); <-done }
}

// TestAddfdSendUnderSignals: a signal that interrupts the supervisor in
// SECCOMP_IOCTL_NOTIF_ADDFD with SECCOMP_ADDFD_FLAG_SEND, before the
// target took the descriptor, leaves the notification answered (the
// flag's "exactly one reply") with no descriptor: the target's call
// returned 0, its stdin, for the netlink socket it asked for, and the
// restarted ioctl said EINPROGRESS. Seen once in nettrap's own suite
// under nettrap. The hand-over of netlink sockets under notify is the
// ADDFD|SEND most made.
func TestAddfdSendUnderSignals(t *testing.T) {
	if underPtrace() {
		t.Skip("the ptrace engine hands netlink sockets over without ADDFD (TestPtraceHandOverUnderSignals)")
	}
	out, rep := confinedWith(t, []string{signalStormEnv + "=1", usernsEnv + "=off"}, "netlink-storm", "300")
	expect(t, out, "ok:300")
	if len(rep.Errors) > 0 {
		t.Errorf("supervisor errors: %v", rep.Errors)
	}
	if os.Geteuid() == 0 && rep.Capless < 300 {
		t.Errorf("%d sockets handed over without capabilities, want 300", rep.Capless)
	}
}
