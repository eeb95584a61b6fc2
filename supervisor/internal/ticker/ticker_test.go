package ticker

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// waitFor polls cond for up to ten seconds: a liveness check, not a
// timing one (a loaded machine only makes it slower).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestTickerStopsWhenIdle: the Ticker checks while there is work and
// stops after Idle quiet ticks; the next Arm starts it again.
func TestTickerStopsWhenIdle(t *testing.T) {
	var busy atomic.Int32
	var checks atomic.Int32
	tk := &Ticker{Period: time.Millisecond, Idle: 3, Check: func() bool {
		checks.Add(1)
		return busy.Add(-1) >= 0
	}}
	busy.Store(5)
	tk.Arm()
	waitFor(t, "the ticker to stop", func() bool { return !tk.ticking.Load() })
	// Five busy ticks, then three quiet ones (busy goes negative).
	if n := checks.Load(); n != 8 {
		t.Errorf("%d checks, want 5 busy and 3 quiet", n)
	}
	busy.Store(0)
	tk.Arm()
	waitFor(t, "the re-armed ticker to stop", func() bool { return !tk.ticking.Load() && checks.Load() == 11 })
	tk.Stop()
}

// TestTickerMissesNoArm: work put just as the ticker stops is always
// checked: every item put before an Arm is taken by some later Check.
func TestTickerMissesNoArm(t *testing.T) {
	var mu sync.Mutex
	pending, taken := 0, 0
	tk := &Ticker{Period: 50 * time.Microsecond, Idle: 1, Check: func() bool {
		mu.Lock()
		defer mu.Unlock()
		n := pending
		taken += n
		pending = 0
		return n > 0
	}}
	defer tk.Stop()
	const items = 2000
	for i := range items {
		mu.Lock()
		pending++
		mu.Unlock()
		tk.Arm()
		if i%7 == 0 {
			// Let the ticker go idle now and then, so that Arm races
			// with its stopping.
			time.Sleep(time.Duration(i%300) * time.Microsecond)
		}
	}
	waitFor(t, "every item to be taken", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return taken == items
	})
}

// TestTickerStop: after Stop the goroutine ends and Arm starts nothing.
func TestTickerStop(t *testing.T) {
	var checks atomic.Int32
	tk := &Ticker{Period: time.Millisecond, Idle: 1 << 30, Check: func() bool {
		checks.Add(1)
		return true
	}}
	tk.Arm()
	waitFor(t, "a check", func() bool { return checks.Load() > 0 })
	tk.Stop()
	tk.Arm()
	time.Sleep(5 * time.Millisecond)
	before := checks.Load()
	time.Sleep(20 * time.Millisecond)
	if after := checks.Load(); after != before {
		t.Errorf("%d checks after Stop", after-before)
	}
}

// TestTickerArmWhileStopping: an Arm that comes after the last quiet
// Check, while the ticker is stopping (it still counts as ticking), is
// not lost: the work it armed for is checked.
func TestTickerArmWhileStopping(t *testing.T) {
	var pending, taken atomic.Int32
	var tk *Ticker
	raced := false
	tk = &Ticker{Period: time.Millisecond, Idle: 1, Check: func() bool {
		n := pending.Swap(0)
		taken.Add(n)
		return n > 0
	}}
	tk.beforeStop = func() {
		if !raced {
			raced = true
			pending.Add(1)
			tk.Arm() // sees the ticker ticking: starts nothing
		}
	}
	defer tk.Stop()
	tk.Arm()
	waitFor(t, "the work armed while stopping to be taken", func() bool { return taken.Load() == 1 })
}

// TestTickersShareAClock: Tickers of one period tick on one clock, which
// stops once every one of them has gone idle, and starts again on an Arm.
func TestTickersShareAClock(t *testing.T) {
	const period = 3 * time.Millisecond // no other test's
	var busy [2]atomic.Int32
	var checks [2]atomic.Int32
	tks := make([]*Ticker, 2)
	for i := range tks {
		tks[i] = &Ticker{Period: period, Idle: 2, Check: func() bool {
			checks[i].Add(1)
			return busy[i].Load() > 0
		}}
		defer tks[i].Stop()
		busy[i].Store(1)
		tks[i].Arm()
	}
	c := clockOf(period)
	attached := func() int {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.tickers)
	}
	if n := attached(); n != 2 {
		t.Fatalf("%d tickers on the clock, want both", n)
	}
	waitFor(t, "both tickers to check", func() bool { return checks[0].Load() > 0 && checks[1].Load() > 0 })
	busy[0].Store(0)
	waitFor(t, "the first ticker to stop", func() bool { return !tks[0].ticking.Load() })
	if n := attached(); n != 1 || !tks[1].ticking.Load() {
		t.Fatalf("%d tickers on the clock after the first stopped, want the busy one", n)
	}
	busy[1].Store(0)
	waitFor(t, "the clock to stop", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return !c.running
	})
	before := checks[1].Load()
	busy[1].Store(1)
	tks[1].Arm()
	waitFor(t, "the clock to start again", func() bool { return checks[1].Load() > before })
}
