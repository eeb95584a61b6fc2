package ticker

import (
	"sync"
	"sync/atomic"
	"time"
)

// Ticker calls Check every Period from a goroutine of its own, started by
// Arm, until Check has reported Idle ticks in a row with nothing to do or
// Stop is called. The zero Ticker is not usable: set Period, Idle and
// Check before the first Arm, and do not change them after.
type Ticker struct {
	Period time.Duration
	// Idle is how many quiet ticks in a row end the ticking; at least 1.
	Idle int
	// Check looks at what is in hand and reports whether there was
	// anything (a quiet tick returns false). It runs on the Ticker's
	// goroutine, one call at a time.
	Check func() (busy bool)

	ticking  atomic.Bool
	armed    atomic.Uint64 // Arm calls so far
	stop     chan struct{}
	once     sync.Once
	stopOnce sync.Once

	beforeStop func() // tests: runs between the last quiet Check and stopping
}

// Arm starts the ticking if it has stopped. Call it after whatever Check
// is to see has been put where Check looks: a Ticker that is just
// stopping either sees that Arm was called and goes on, or has stopped
// before Arm looks, and Arm starts it again.
func (t *Ticker) Arm() {
	t.armed.Add(1)
	if t.ticking.Load() || !t.ticking.CompareAndSwap(false, true) {
		return
	}
	t.init()
	select {
	case <-t.stop:
		t.ticking.Store(false)
		return
	default:
	}
	go t.run()
}

// Stop ends the ticking for good: the goroutine ends at its next tick at
// the latest (a Check may still run once), and Arm does nothing from then
// on. Check must stay safe to call after Stop.
func (t *Ticker) Stop() {
	t.init()
	t.stopOnce.Do(func() { close(t.stop) })
}

func (t *Ticker) init() {
	t.once.Do(func() { t.stop = make(chan struct{}) })
}

// run ticks until Idle quiet ticks or Stop.
func (t *Ticker) run() {
	tk := time.NewTicker(t.Period)
	defer tk.Stop()
	quiet := 0
	for {
		seen := t.armed.Load()
		select {
		case <-tk.C:
		case <-t.stop:
			return
		}
		if t.Check() {
			quiet = 0
			continue
		}
		if quiet++; quiet < max(t.Idle, 1) {
			continue
		}
		if t.beforeStop != nil {
			t.beforeStop()
		}
		// Stopping. An Arm after this Store starts a new goroutine; one
		// before it has counted in armed first, which this tick's load
		// then sees: go on, unless another Arm already took over.
		t.ticking.Store(false)
		if t.armed.Load() == seen || !t.ticking.CompareAndSwap(false, true) {
			return
		}
		quiet = 0
	}
}
