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

// TestParA dials while TestParB is certainly running: the attempt cannot
// be pinned to one of them.
func TestParA(t *testing.T) {
	t.Parallel()
	close(arrivedA)
	<-arrivedB
	_ = fx.Dial(fx.External, 1101, t.Name())
	close(dialedA)
}

func TestParB(t *testing.T) {
	t.Parallel()
	close(arrivedB)
	<-arrivedA
	<-dialedA
}
