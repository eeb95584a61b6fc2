package notify

import (
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// Without SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (kernels before 6.6) the
// kernel wakes a blocked receiver like any other task. A receiver that,
// after an answer, looks at the listener without blocking for a while
// picks up a busy target's next notification with no wake-up at all; on
// an earlier machine kind that won back the wake-up of an idle virtual
// CPU. On this project's machine kind (2 vCPUs, Linux 6.18, issue 23's
// final run) it loses: a 50 µs spin took the CPU the target's own work
// needed, and connect cost 1.34× the blocking C floor's added time with
// it, 0.82× without (sendto 0.73 and 0.92, the GSO send 0.80 either way),
// at two to three times the CPU. So receivers block at once; the spin
// stays for the benchmarks to weigh on other machines (spinEnv).

// spinEnv sets the spin (in microseconds, 0: none) for the benchmarks: a
// test-only switch, like noSyncWakeUpEnv.
const spinEnv = "NETTRAP_TEST_RECV_SPIN_US"

// RecvSpin is how long a receiver spins before it blocks in RECV: none,
// unless spinEnv says otherwise.
func RecvSpin() time.Duration {
	if v, ok := os.LookupEnv(spinEnv); ok {
		if us, err := strconv.Atoi(v); err == nil && us >= 0 {
			return time.Duration(us) * time.Microsecond
		}
	}
	return 0
}

// spin polls the listener without blocking for up to d, and returns as
// soon as a notification is pending (or the listener hung up).
func (l *Engine) spin(d time.Duration) {
	fds := []unix.PollFd{{Fd: int32(l.listener), Events: unix.POLLIN}}
	until := time.Now().Add(d)
	for {
		fds[0].Revents = 0
		if n, err := unix.Poll(fds, 0); n > 0 || (err != nil && err != unix.EINTR) {
			return
		}
		if time.Now().After(until) {
			return
		}
	}
}
