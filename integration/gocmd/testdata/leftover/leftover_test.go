// Package leftover holds a goroutine that outlives its test: TestA starts
// it, and it dials only once TestB lets it (a handshake, no sleep), so
// that nettrap sees the attempt during TestB. TestOdd sets the nettrap
// attribute to an unknown value.
package leftover

import (
	"testing"

	"example.com/fixtures/fx"
)

var (
	release = make(chan struct{})
	dialed  = make(chan struct{})
)

func TestA(t *testing.T) {
	go func() {
		<-release
		_ = fx.Dial(fx.External, 4001, "TestA-goroutine")
		close(dialed)
	}()
}

func TestB(t *testing.T) {
	close(release)
	<-dialed
}

func TestOdd(t *testing.T) {
	t.Attr("nettrap", "yes")
}

func TestLast(t *testing.T) {}
