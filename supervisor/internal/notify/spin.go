package notify

import (
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// Without SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (kernels before 6.6) the
// kernel wakes a blocked receiver like any other task: often on another
// CPU, which on a virtual machine has gone idle and must be woken first,
// tens of microseconds per call. A receiver that, after an answer, looks
// at the listener without blocking for a short while (spinBeforeRecv)
// picks up the next notification of a busy target with no wake-up at all.
// The spin is bounded per answer and never happens while idle: a
// supervisor with nothing to do blocks in RECV as before.
const spinBeforeRecv = 50 * time.Microsecond

// spinEnv overrides the spin (in microseconds, 0: none) for the
// benchmarks: a test-only switch, like noSyncWakeUpEnv.
const spinEnv = "NETTRAP_TEST_RECV_SPIN_US"

// RecvSpin is how long a receiver spins before it blocks in RECV.
func RecvSpin(syncWakeUp bool) time.Duration {
	if v, ok := os.LookupEnv(spinEnv); ok {
		if us, err := strconv.Atoi(v); err == nil && us >= 0 {
			return time.Duration(us) * time.Microsecond
		}
	}
	if syncWakeUp {
		return 0 // the target hands its CPU over: nothing to win
	}
	return spinBeforeRecv
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
