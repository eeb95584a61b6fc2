package emulate

import (
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/procfs"
	"github.com/nettrap/nettrap/supervisor/internal/ticker"
)

// watcher guards emulated calls that may block for long (a connect to an
// address that never answers takes minutes): if the target dies, or the
// loop stops, the socket is shut down, which wakes the blocked call; the
// watch of a connect also answers the call early when the thread has a
// signal to take (emuintr.go).
//
// Most such calls return at once (a loopback connect), so a call is only
// listed while it runs, and one goroutine (a ticker.Ticker), ticking every
// watchAfter while calls come, starts the watch of a call it finds listed
// on two ticks in a row: after 1–2 ms. Per call that is a map insert and delete under a
// lock: no timer, no goroutine, no allocation. (A timer per call, with its
// closure and channel, cost about a microsecond of an emulated loopback
// connect, and woke the Go scheduler's idle threads.) The list is linked
// through the watches, which live in the calls: a map's hashing cost a
// tenth of a microsecond more. The ticker stops after watchIdleTicks
// quiet ticks: an idle supervisor sleeps.
type watcher struct {
	mu    sync.Mutex
	calls watchList
	once  sync.Once
	tick  ticker.Ticker // looks at calls every watchAfter while there are any
}

// watchList is the listed calls, linked through their watches.
type watchList struct {
	head *watch
	n    int
}

func (l *watchList) add(wt *watch) {
	wt.prev, wt.next = nil, l.head
	if l.head != nil {
		l.head.prev = wt
	}
	l.head = wt
	l.n++
}

func (l *watchList) remove(wt *watch) {
	if wt.prev != nil {
		wt.prev.next = wt.next
	} else {
		l.head = wt.next
	}
	if wt.next != nil {
		wt.next.prev = wt.prev
	}
	wt.prev, wt.next = nil, nil
	l.n--
}

// watch is one listed call; it lives in the call's borrowed socket.
type watch struct {
	s       *Borrowed
	stop    int // read end of the loop's wake pipe
	connect bool
	ticks   int           // ticks seen while listed
	efd     int           // eventfd that ends the started watch
	ended   chan struct{} // closed when the started watch returned; nil: not started
	// prev and next link the listed calls (watchList).
	prev, next *watch
}

// watchAfter is the watcher's tick: a call is watched once it has run
// for one to two ticks.
const watchAfter = time.Millisecond

// watchIdleTicks is how many ticks without a listed call the ticker waits
// before it stops (a target that connects in bursts keeps it going).
const watchIdleTicks = 50

// begin lists s's call until end. stop is the loop's wake pipe.
func (w *watcher) begin(s *Borrowed, stop int, connect bool) *watch {
	wt := &s.w
	*wt = watch{s: s, stop: stop, connect: connect, efd: -1}
	w.mu.Lock()
	w.calls.add(wt)
	w.mu.Unlock()
	w.once.Do(func() {
		w.tick.Period, w.tick.Idle, w.tick.Check = watchAfter, watchIdleTicks, w.check
	})
	w.tick.Arm()
	return wt
}

// end unlists the call, and ends its watch if it started, waiting for
// the watch to let go of the socket (which the caller closes next).
func (w *watcher) end(wt *watch) {
	w.mu.Lock()
	w.calls.remove(wt)
	ended := wt.ended
	if ended != nil {
		unix.Write(wt.efd, []byte{1, 0, 0, 0, 0, 0, 0, 0})
	}
	w.mu.Unlock()
	if ended != nil {
		<-ended
		unix.Close(wt.efd)
	}
}

// check starts the watch of every call listed for two ticks; it tells
// the ticker whether any call is listed.
func (w *watcher) check() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for wt := w.calls.head; wt != nil; wt = wt.next {
		if wt.ended == nil {
			if wt.ticks++; wt.ticks >= 2 {
				w.startLocked(wt)
			}
		}
	}
	return w.calls.n > 0
}

// startLocked starts wt's watch. Without an eventfd to end it by, it
// tries again on the next tick.
func (w *watcher) startLocked(wt *watch) {
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		return
	}
	wt.efd, wt.ended = fd, make(chan struct{})
	go func() {
		defer close(wt.ended)
		wt.s.shutdownOnExit(fd, wt.stop, wt.connect)
	}()
}

// shutdownOnExit waits for the target thread to exit (its pidfd becomes
// readable), the loop to stop, or done; on the first two it shuts the
// socket down. For a connect it also looks for a signal every
// signalPoll, until it has answered the call early.
func (s *Borrowed) shutdownOnExit(done, stop int, connect bool) {
	fds := []unix.PollFd{
		{Fd: int32(s.pidfd), Events: unix.POLLIN},
		{Fd: int32(stop), Events: unix.POLLIN},
		{Fd: int32(done), Events: unix.POLLIN},
	}
	timeout := -1
	if connect {
		timeout = int(signalPoll / time.Millisecond)
	}
	for {
		n, err := unix.Poll(fds, timeout)
		if err == unix.EINTR {
			continue
		}
		if err == nil && n == 0 {
			if s.interrupt() {
				timeout = -1
			}
			continue
		}
		if err == nil && fds[2].Revents != 0 {
			return
		}
		if err == nil && fds[1].Revents == 0 && s.left && procfs.Running(s.tgid) {
			// The thread left the call before it ended, and exited: the
			// socket is its process's, which lives on.
			fds[0].Fd = -1
			continue
		}
		unix.Shutdown(s.FD, unix.SHUT_RDWR)
		return
	}
}
