package whereblame

import (
	"net"
	"testing"
	"time"

	"example.com/fixtures/where"
)

// Which test's goroutine started the caller's, through its creators:
// each case dials from a goroutine no test's frame is on.

// TestDialParallel listens on every address and dials what it got
// ([::]:5024): net's parallel dialer dials each family from a goroutine
// of its own, which nettrap refuses (an unspecified destination); the
// lines place both at this test's own line, where it started them.
func TestDialParallel(t *testing.T) {
	ln, err := net.Listen("tcp", ":5024")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if c, err := net.DialTimeout("tcp", ln.Addr().String(), 10*time.Second); err == nil {
		c.Close()
		t.Error("connected to the unspecified address")
	}
}

// TestProberStart starts a prober and ends; its check dials 300ms later,
// during TestProberLater, which only waits for it: TestProberLater
// passes, and the package fails (naming TestProberStart where the
// runtime kept the creators' stacks).
var prober *Prober

func TestProberStart(t *testing.T) {
	prober = StartProber(5021, 300*time.Millisecond)
}

func TestProberLater(t *testing.T) {
	<-prober.Done
}

// A worker started in init dials for TestInitWorker: the worker is the
// main goroutine's, no test's; the package fails, TestInitWorker
// passes.
var initWork = make(chan int)
var initDone = make(chan struct{})

func init() {
	go func() {
		for port := range initWork {
			_ = where.Fetch(port)
			initDone <- struct{}{}
		}
	}()
}

func TestInitWorker(t *testing.T) {
	initWork <- 5022
	<-initDone
}

// TestPoolA starts the pool's worker with a job that dials nothing;
// TestPoolB's job dials on that worker. The worker is TestPoolA's
// goroutine's, whoever hands it jobs: the evidence says who started it,
// not who submitted the job (docs/tests.md). TestPoolB passes, the
// package fails.
var pool Pool

func TestPoolA(t *testing.T) {
	pool.Submit(func() {})
}

func TestPoolB(t *testing.T) {
	pool.Submit(func() { _ = where.Fetch(5023) })
}

// TestParGoA dials from a goroutine it starts while TestParGoB certainly
// runs: its creator, TestParGoA's own goroutine, pins the call to it, and
// TestParGoB passes.
var parGoArrivedA, parGoArrivedB, parGoDialed = make(chan struct{}), make(chan struct{}), make(chan struct{})

func TestParGoA(t *testing.T) {
	t.Parallel()
	close(parGoArrivedA)
	<-parGoArrivedB
	go func() {
		_ = where.Fetch(5025)
		close(parGoDialed)
	}()
	<-parGoDialed
}

func TestParGoB(t *testing.T) {
	t.Parallel()
	close(parGoArrivedB)
	<-parGoArrivedA
	<-parGoDialed
}
