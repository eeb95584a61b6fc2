package whereblame

import (
	"sync"
	"testing"

	"example.com/fixtures/where"
)

// TestStoredA makes two dialers, a closure and an inlined helper's, and
// stores them; it dials nothing, and passes.
var stored, storedInl func()

func TestStoredA(t *testing.T) {
	stored = func() { _ = where.Fetch(5014) }
	storedInl = MakeDialer(5015)
}

// TestStoredB calls them once TestStoredA has ended, each from a
// goroutine of its own: the inlined helper's from a closure of its own
// (TestStoredB's frame is on the stack: TestStoredB fails), the plain
// closure as sync.WaitGroup.Go's function (no frame of TestStoredB; the
// closure is named after TestStoredA, which says where it was written,
// not who started the goroutine: no test is named, the package fails).
func TestStoredB(t *testing.T) {
	done := make(chan struct{})
	go func() {
		storedInl()
		close(done)
	}()
	<-done
	var wg sync.WaitGroup
	wg.Go(stored)
	wg.Wait()
}

// Three tests run in parallel and each dials while the others certainly
// run (a barrier, no sleep): each call is pinned to its test by the
// test's own goroutine (testing.tRunner calls TestParPinA; a subtest's
// function is a literal written in TestParSubtest), so each line names
// one test, which alone fails for it. The fixture runs with -parallel=4.
var arrived, dialed sync.WaitGroup

func init() {
	arrived.Add(3)
	dialed.Add(3)
}

// barrier dials once the three tests have arrived, and returns once
// the three have dialed.
//
//go:noinline
func barrier(dial func()) {
	arrived.Done()
	arrived.Wait()
	dial()
	dialed.Done()
	dialed.Wait()
}

func TestParPinA(t *testing.T) {
	t.Parallel()
	barrier(func() { _ = (&where.Client{Port: 5011}).Get() })
}

func TestParPinB(t *testing.T) {
	t.Parallel()
	barrier(func() { _ = where.Fetch(5012) })
}

func TestParSubtest(t *testing.T) {
	t.Parallel()
	t.Run("leaf", func(t *testing.T) {
		barrier(func() { _ = where.Fetch(5013) })
	})
}
