package main

import (
	"fmt"
	"os"
	"time"

	"github.com/nettrap/nettrap/audit"
	"github.com/nettrap/nettrap/gotest"
)

// pipeGrace is how long to wait for the test output's EOF after the binary
// exited.
const pipeGrace = 2 * time.Second

// testBinary is the extra wiring for a Go test binary: its output pipe and
// the tracker that reads it.
type testBinary struct {
	w       *os.File // the write end, the child's stdout and stderr
	tracker *gotest.Tracker
	done    chan error
}

// newTestBinary sets up attribution for a Go test binary and returns the
// argv to run it with (-test.v=test2json in front of the user's arguments).
func newTestBinary(cfg *config, pkg string) (*testBinary, []string, error) {
	plan := gotest.Rewrite(cfg.args)
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("pipe: %w", err)
	}
	tr, err := gotest.NewTracker(r, os.Stdout, plan, pkg, cfg.allowTests)
	if err != nil {
		r.Close()
		w.Close()
		return nil, nil, err
	}
	tr.Sealed = cfg.sealed
	tb := &testBinary{w: w, tracker: tr, done: make(chan error, 1)}
	if gotest.FailFast(cfg.args[1:]) {
		failFast(tb)
	}
	go func() { tb.done <- tr.Run() }()
	return tb, plan.Argv, nil
}

// finish waits for the output, reports stale markers (to write), and
// gives the exit status: 1 if nettrap failed a test the binary itself
// passed.
func (tb *testBinary) finish(status int, write func(audit.Record)) int {
	// The binary has exited. A subprocess it left behind may hold the
	// pipe open: wait a little for EOF, as the go command's WaitDelay does,
	// then take what is there and stop reading.
	select {
	case err := <-tb.done:
		if err != nil {
			fmt.Fprintf(os.Stderr, "nettrap: reading the test output: %v\n", err)
		}
	case <-time.After(pipeGrace):
		fmt.Fprintf(os.Stderr, "nettrap: a subprocess of the test binary still holds its output open; not waiting for it\n")
	}
	recs, err := tb.tracker.Finish()
	if err != nil {
		fmt.Fprintf(os.Stderr, "nettrap: writing the test output: %v\n", err)
	}
	for _, rec := range recs { // stale and bad markers
		write(rec)
	}
	if tb.tracker.Failed() && (status == 0 || tb.tracker.Stopped()) {
		return 1 // a failed run, even if nettrap killed it under -failfast
	}
	return status
}
