// Package parallel: an attempt made while two t.Parallel tests run. Run
// it with -test.parallel=2 (at least): the tests wait for each other.
package parallel

import (
	"testing"

	"example.com/fixtures/fx"
)

var (
	arrivedA = make(chan struct{})
	arrivedB = make(chan struct{})
	dialedA  = make(chan struct{})
)

// TestParA dials while TestParB is certainly running, from a goroutine
// it starts: the attempt cannot be pinned to one of them. A frame of
// the test's own goroutine would pin it (the test function called by
// testing.tRunner); a closure's name only says where it was written,
// and nettrap does not read yet which goroutine started this one.
func TestParA(t *testing.T) {
	t.Parallel()
	close(arrivedA)
	<-arrivedB
	go func() {
		_ = fx.Dial(fx.External, 1101, t.Name())
		close(dialedA)
	}()
	<-dialedA
}

func TestParB(t *testing.T) {
	t.Parallel()
	close(arrivedB)
	<-arrivedA
	<-dialedA
}
