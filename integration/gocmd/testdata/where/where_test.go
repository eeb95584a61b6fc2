package where

import (
	"net"
	"os"
	"sync"
	"testing"

	"example.com/fixtures/fx"
)

// TestMain dials before the tests: an attempt at collection time.
func TestMain(m *testing.M) {
	if addr, err := fx.Addr(fx.Private, 5009); err == nil {
		_ = closeConn(net.DialTimeout("tcp", addr, fx.Timeout))
	}
	os.Exit(m.Run())
}

func TestDirect(t *testing.T) {
	addr, err := fx.Addr(fx.External, 5001)
	if err != nil {
		t.Fatal(err)
	}
	_ = closeConn(net.DialTimeout("tcp", addr, fx.Timeout))
}

func TestHelper(t *testing.T) {
	_ = Fetch(5002)
}

func TestMethod(t *testing.T) {
	c := &Client{Port: 5003}
	_ = c.Get()
}

func TestClosure(t *testing.T) {
	dial := func(port int) error {
		addr, err := fx.Addr(fx.External, port)
		if err != nil {
			return err
		}
		return closeConn(net.DialTimeout("tcp", addr, fx.Timeout))
	}
	_ = dial(5004)
}

func TestGoroutineWaited(t *testing.T) {
	var wg sync.WaitGroup
	wg.Go(func() {
		_ = Fetch(5005)
	})
	wg.Wait()
}

// A goroutine TestLeftA starts and leaves running dials during
// TestLeftB, once TestLeftB lets it (a handshake, no sleep).
var (
	release = make(chan struct{})
	dialed  = make(chan struct{})
)

func TestLeftA(t *testing.T) {
	go func() {
		<-release
		_ = Fetch(5006)
		close(dialed)
	}()
}

func TestLeftB(t *testing.T) {
	close(release)
	<-dialed
}

func TestParallelSub(t *testing.T) {
	t.Run("sub", func(t *testing.T) {
		t.Parallel()
		c := &Client{Port: 5007}
		_ = c.Get()
	})
}
