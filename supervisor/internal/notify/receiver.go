package notify

import (
	"errors"
	"os"
	"runtime"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/supervisor/internal/ticker"
	"github.com/nettrap/nettrap/supervisor/internal/unotify"
)

// receivers is the state of the blocking receive loop (runBlocking).
//
// One receiver at a time has the turn: a goroutine locked to its OS
// thread, blocked in SECCOMP_IOCTL_NOTIF_RECV, that decides and answers
// what it receives itself, then blocks again. Blocked in RECV (not in
// poll) it is what SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP hands the target's
// CPU to: the target wakes it on its own CPU and sleeps, and the answer
// wakes the target back there, with no other thread and no Go scheduler
// hop in between. Per call there is no timer, no goroutine and no lock:
// an atomic add, a store and a compare-and-swap.
//
// A decision can take long (a decider draining a test's output). A
// watchdog (a ticker.Ticker, watch), ticking every handOffAfter while calls come, passes the turn
// to a new receiver when it sees the same call in hand on two ticks in a
// row; the slow receiver finishes its call and ends. So other threads'
// calls wait at most about two ticks behind a slow one. A receiver is
// only ever superseded while it handles a call: the watchdog marks the
// call in hand (a compare-and-swap of handling), and the receiver, done
// with it, clears it with a compare-and-swap that fails if it was marked.
// One of the two wins, so no two receivers ever wait in RECV at once:
// each would be woken by every notification (the kernel wakes all
// waiters, one wins), a context switch per call for nothing. When no call came for idleTicks ticks the watchdog stops
// ticking until the next call: an idle supervisor sleeps.
type receivers struct {
	watchdog ticker.Ticker // passes the turn on (check) every handOffAfter while calls come
	alive    atomic.Int32  // receivers running (counted for kick)

	seq atomic.Uint64 // calls received

	mu      sync.Mutex
	cur     *receiverState // the receiver whose turn it is
	running int            // receivers not yet ended
	ended   chan struct{}  // closed when running drops to 0: no more start

	// The watchdog's view at its last tick, guarded by mu.
	lastHandling, lastSeq uint64
}

// receiverState is one receiver's.
type receiverState struct {
	// handling is the seq of the call in hand (0: none), with
	// supersededBit set once a successor has the turn: the receiver
	// ends after this call.
	handling atomic.Uint64
}

// supersededBit marks a receiver's call in hand as its last.
const supersededBit = 1 << 63

// startBlocking starts the first blocking receiver. It must run before
// Start returns: the kick (kick.go) wakes as many receivers as it counts,
// and a command that exits at once would otherwise be kicked before its
// first receiver was counted, which would then wait in RECV for good.
func (l *Engine) startBlocking() {
	l.recv.ended = make(chan struct{})
	l.recv.watchdog.Period, l.recv.watchdog.Idle, l.recv.watchdog.Check = handOffAfter, idleTicks, l.watch
	l.recv.mu.Lock()
	l.startReceiverLocked()
	l.recv.mu.Unlock()
}

// runBlocking serves with blocking receivers until every one has ended:
// stopped (kick.go) or the filter has no user left.
func (l *Engine) runBlocking() {
	<-l.recv.ended
	l.recv.watchdog.Stop()
}

// startReceiverLocked starts a receiver and gives it the turn.
func (l *Engine) startReceiverLocked() {
	st := &receiverState{}
	l.recv.cur = st
	l.recv.running++
	l.recv.alive.Add(1)
	go l.receiver(st)
}

func (l *Engine) receiverEnded() {
	l.recv.mu.Lock()
	defer l.recv.mu.Unlock()
	if l.recv.running--; l.recv.running == 0 {
		close(l.recv.ended)
	}
}

// receiver is one receiver: it serves until it is superseded.
func (l *Engine) receiver(st *receiverState) {
	defer l.receiverEnded()
	counted := true
	defer func() {
		if counted {
			l.recv.alive.Add(-1)
		}
	}()
	// Locked: the thread blocked in RECV is the one the kernel wakes;
	// a goroutine moved to another thread between two calls would make
	// every wake-up a Go scheduler hand-off.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	unsignaled, restore := false, func() {}
	if !l.keepSignals {
		unsignaled, restore = blockSignals()
	}
	defer restore()
	var n unotify.Notif
	for {
		if l.recvSpin > 0 {
			l.spin(l.recvSpin)
		}
		err := unotify.Recv(l.listener, &n)
		if l.stopping.Load() {
			if err == nil {
				// A kick, or a stray descendant's call: the listener
				// closes next, and the kernel answers ENOSYS from then on.
				counted = false
				l.recv.alive.Add(-1)
				unotify.Send(l.listener, &unotify.Resp{ID: n.ID, Error: -int32(unix.ENOSYS)})
			}
			return
		}
		if err != nil {
			if l.recvFailed(err) {
				return
			}
			continue
		}
		l.stats.Notifications.Add(1)
		h := l.recv.seq.Add(1) &^ supersededBit
		st.handling.Store(h)
		l.recv.watchdog.Arm()
		l.handle(&n, unsignaled)
		if !st.handling.CompareAndSwap(h, 0) {
			return // superseded: a successor has the turn
		}
	}
}

// blockSignals blocks every signal on the calling thread, a receiver's,
// tells whether it did, and returns what puts the thread's mask back
// (called before the thread is unlocked, so that no other goroutine runs
// with it). The Go runtime sends process-wide signals to its other
// threads, and needs no signal to stop a goroutine that is in a syscall
// or calls functions. What it buys: a blocking connect nettrap makes on
// the thread is never interrupted, so what an interrupted one would have
// said need not be read beforehand (emulate's interruptedTimeout: a
// getsockopt per blocking connect).
func blockSignals() (blocked bool, restore func()) {
	var all, old unix.Sigset_t
	for i := range all.Val {
		all.Val[i] = ^uint64(0)
	}
	if unix.PthreadSigmask(unix.SIG_BLOCK, &all, &old) != nil {
		return false, func() {}
	}
	return true, func() { unix.PthreadSigmask(unix.SIG_SETMASK, &old, nil) }
}

// recvFailed handles a failed RECV, and tells whether the receiver ends.
// ENOENT is normal: the target left its call (a signal, Go's SIGURG
// preemption, death) before it was received; or, since 6.6, the filter
// has no user left, which poll tells as POLLHUP. EINTR: a signal to our
// thread.
func (l *Engine) recvFailed(err error) bool {
	switch {
	case errors.Is(err, unix.EINTR):
		return false
	case errors.Is(err, unix.ENOENT):
		return l.hungUp()
	}
	l.report(os.NewSyscallError("ioctl(SECCOMP_IOCTL_NOTIF_RECV)", err))
	return true
}

// hungUp tells whether the filter has no user left.
func (l *Engine) hungUp() bool {
	fds := []unix.PollFd{{Fd: int32(l.listener), Events: unix.POLLIN}}
	for {
		_, err := unix.Poll(fds, 0)
		if err == unix.EINTR {
			continue
		}
		return err != nil || fds[0].Revents&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0
	}
}

// idleTicks is how many ticks without a call the watchdog waits before it
// stops ticking. Arming it again costs the receiver a goroutine start on
// its next call; a few dozen quiet ticks (a thousand a second, each a
// look under a lock) spare that to a target that calls in bursts, as a
// QUIC stack does, and an idle supervisor still sleeps soon.
const idleTicks = 50

// watch is the watchdog's look: a call in hand on two ticks in a row
// passes the turn to a new receiver. It tells whether calls came.
func (l *Engine) watch() (busy bool) {
	l.recv.mu.Lock()
	defer l.recv.mu.Unlock()
	cur, seq := l.recv.cur, l.recv.seq.Load()
	handling := cur.handling.Load()
	busy = handling != 0 || seq != l.recv.lastSeq
	if handling != 0 && handling == l.recv.lastHandling {
		// The same call in hand as a tick ago: mark it the receiver's
		// last, unless it was done with it meanwhile.
		if !l.stopping.Load() && l.recv.running > 0 && cur.handling.CompareAndSwap(handling, handling|supersededBit) {
			l.startReceiverLocked()
		}
		handling = 0
	}
	l.recv.lastHandling, l.recv.lastSeq = handling, seq
	return busy
}
