package ancestry

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// The victim: this test binary re-executed with victimEnv set makes a
// chain of goroutines, main → creatorA → creatorB → blocker, the last
// blocked in read(2) on a pipe nobody writes, after it wrote "ready FD".
// With victimEnv=exited, creatorA and creatorB return once they have
// started the next one, and the blocker waits until they have; with
// victimEnv=test, the test TestAncestryVictim is the chain's root.
const victimEnv = "NETTRAP_ANCESTRY_VICTIM"

func TestMain(m *testing.M) {
	switch os.Getenv(victimEnv) {
	case "":
		os.Exit(m.Run())
	case "live", "exited":
		idle(os.Getenv(extraEnv))
		go creatorA(os.Getenv(victimEnv) == "exited", runtime.NumGoroutine()+1)
		time.Sleep(time.Hour)
	case "test":
		os.Exit(m.Run()) // runs TestAncestryVictim only
	}
	os.Exit(2)
}

// TestAncestryVictim is the root of the chain when the test binary is a
// victim (victimEnv=test): its goroutines exit, the blocker remains.
func TestAncestryVictim(t *testing.T) {
	if os.Getenv(victimEnv) != "test" {
		t.Skip("the victim of TestReadChain, run by it")
	}
	go creatorA(true, runtime.NumGoroutine()+1)
	time.Sleep(time.Hour)
}

var park = make(chan struct{})

// extraEnv sets how many more goroutines the victim parks, for the
// benchmark: each is read to find the caller and its creators.
const extraEnv = "NETTRAP_ANCESTRY_VICTIM_EXTRA"

func idle(n string) {
	k, _ := strconv.Atoi(n)
	for i := 0; i < k; i++ {
		go func() { <-park }()
	}
}

//go:noinline
func creatorA(exit bool, want int) {
	go creatorB(exit, want)
	if !exit {
		<-park
	}
}

//go:noinline
func creatorB(exit bool, want int) {
	go blocker(exit, want)
	if !exit {
		<-park
	}
}

// blocker waits, when its creators exit, until the goroutines are down
// to want (the creators have returned; for 10s at most: the test then
// fails on what it reads), then blocks in read.
//
//go:noinline
func blocker(exit bool, want int) {
	for start := time.Now(); exit && runtime.NumGoroutine() > want && time.Since(start) < 10*time.Second; {
		time.Sleep(time.Millisecond)
	}
	var p [2]int
	if err := syscall.Pipe(p[:]); err != nil {
		panic(err)
	}
	fmt.Printf("ready %d\n", p[0])
	var b [1]byte
	syscall.Read(p[0], b[:])
	panic("read returned")
}
