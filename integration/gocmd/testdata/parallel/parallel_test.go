// Package parallel: an attempt made while two t.Parallel tests run. Run
// it with -test.parallel=2 (at least): the tests wait for each other.
package parallel

import (
	"os"
	"os/exec"
	"testing"

	"example.com/fixtures/fx"
)

// childEnv makes the binary a subprocess that dials and exits.
const childEnv = "FIXTURE_PARALLEL_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		_ = fx.Dial(fx.External, 1101, "TestParA")
		os.Exit(0)
	}
	os.Exit(m.Run())
}

var (
	arrivedA = make(chan struct{})
	arrivedB = make(chan struct{})
	dialedA  = make(chan struct{})
)

// TestParA dials while TestParB is certainly running, from a subprocess
// it starts: the attempt cannot be pinned to one of them. In the test
// binary itself a call is pinned by the test's own goroutine, or by the
// goroutine that started the caller's; a process it starts runs goroutines
// of its own, which say nothing of the tests of this one.
func TestParA(t *testing.T) {
	t.Parallel()
	close(arrivedA)
	<-arrivedB
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	_ = cmd.Run()
	close(dialedA)
}

func TestParB(t *testing.T) {
	t.Parallel()
	close(arrivedB)
	<-arrivedA
	<-dialedA
}
