package ticker

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Ticker calls Check every Period, started by Arm, until Check has
// reported Idle ticks in a row with nothing to do or Stop is called. The
// zero Ticker is not usable: set Period, Idle and Check before the first
// Arm, and do not change them after.
//
// Tickers of the same Period tick together, on one goroutine (a clock):
// the notify loop's watchdog and the emulated calls' watcher both tick
// while a connect runs, and two goroutines woken every millisecond cost
// a busy target a tenth of a microsecond per call more than one.
type Ticker struct {
	Period time.Duration
	// Idle is how many quiet ticks in a row end the ticking; at least 1.
	Idle int
	// Check looks at what is in hand and reports whether there was
	// anything (a quiet tick returns false). It runs on the clock's
	// goroutine, one call at a time, after or before the Checks of the
	// other Tickers of its Period.
	Check func() (busy bool)

	ticking  atomic.Bool
	armed    atomic.Uint64 // Arm calls so far
	stop     chan struct{}
	once     sync.Once
	stopOnce sync.Once

	// The clock's, while the Ticker is on it: the Arm count before the
	// last Check, and the quiet ticks in a row.
	seen  uint64
	quiet int

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
	clockOf(t.Period).attach(t)
}

// Stop ends the ticking for good: the Ticker leaves its clock at the next
// tick at the latest (a Check may still run once), and Arm does nothing
// from then on. Check must stay safe to call after Stop.
func (t *Ticker) Stop() {
	t.init()
	t.stopOnce.Do(func() { close(t.stop) })
}

func (t *Ticker) init() {
	t.once.Do(func() { t.stop = make(chan struct{}) })
}

func (t *Ticker) stopped() bool {
	select {
	case <-t.stop:
		return true
	default:
		return false
	}
}

// clock ticks for the Tickers of one period, from a goroutine that runs
// while any is attached.
type clock struct {
	period  time.Duration
	mu      sync.Mutex
	tickers []*Ticker
	running bool
}

var (
	clocksMu sync.Mutex
	clocks   = map[time.Duration]*clock{}
)

// clockOf is the clock of period d.
func clockOf(d time.Duration) *clock {
	clocksMu.Lock()
	defer clocksMu.Unlock()
	c := clocks[d]
	if c == nil {
		c = &clock{period: d}
		clocks[d] = c
	}
	return c
}

// attach puts t, which Arm has just marked ticking, on the clock.
func (c *clock) attach(t *Ticker) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t.seen, t.quiet = t.armed.Load(), 0
	c.tickers = append(c.tickers, t)
	if !c.running {
		c.running = true
		go c.run()
	}
}

// run ticks until no Ticker is attached.
func (c *clock) run() {
	tk := time.NewTicker(c.period)
	defer tk.Stop()
	var now []*Ticker
	for range tk.C {
		c.mu.Lock()
		now = append(now[:0], c.tickers...)
		c.mu.Unlock()
		for _, t := range now {
			c.tick(t)
		}
		c.mu.Lock()
		if len(c.tickers) == 0 {
			c.running = false
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
	}
}

// tick is one tick of t: its Check, and its stop after Idle quiet ticks
// or Stop.
func (c *clock) tick(t *Ticker) {
	if t.stopped() {
		c.detach(t) // ticking stays set: Arm does nothing from now on
		return
	}
	t.seen = t.armed.Load()
	if t.Check() {
		t.quiet = 0
		return
	}
	if t.quiet++; t.quiet < max(t.Idle, 1) {
		return
	}
	if t.beforeStop != nil {
		t.beforeStop()
	}
	// Stopping. An Arm after this Store attaches t again (it waits for
	// the clock's lock, held here, so t is never on the clock twice); one
	// since the load before this tick's Check (whose work that Check may
	// have missed) has counted in armed first: go on, unless another Arm
	// already took over.
	c.mu.Lock()
	defer c.mu.Unlock()
	c.detachLocked(t)
	t.ticking.Store(false)
	if t.armed.Load() != t.seen && t.ticking.CompareAndSwap(false, true) {
		t.seen, t.quiet = t.armed.Load(), 0
		c.tickers = append(c.tickers, t)
	}
}

func (c *clock) detach(t *Ticker) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.detachLocked(t)
}

func (c *clock) detachLocked(t *Ticker) {
	if i := slices.Index(c.tickers, t); i >= 0 {
		c.tickers = slices.Delete(c.tickers, i, i+1)
	}
}
