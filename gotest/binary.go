package gotest

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/nettrap/nettrap/audit"
)

// PipeGrace is how long Finish waits for the test output's EOF after the
// binary exited.
const PipeGrace = 2 * time.Second

// Binary is a Go test binary run with attribution: the argv to run it
// with, the pipe its output goes to and the tracker that reads it.
type Binary struct {
	// Argv runs the binary with -test.v=test2json (see Rewrite).
	Argv []string
	// Output is the write end of the pipe, for the binary's stdout and
	// stderr both (as the go command does: the order of its output is
	// kept, and it all goes through the tracker). Close it once the binary
	// has started: EOF comes when the binary is done.
	Output  *os.File
	Tracker *Tracker

	msgs io.Writer
	done chan error
	proc process
}

// NewBinary readies the test binary argv of package pkg: its output,
// rendered as the user asked, goes to out; nettrap's own messages go to
// msgs. The tracker starts reading at once.
func NewBinary(argv []string, pkg string, out, msgs io.Writer, allow []TestRule, sealed bool) (*Binary, error) {
	plan := Rewrite(argv)
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("pipe: %w", err)
	}
	tr, err := NewTracker(r, out, plan, pkg, allow)
	if err != nil {
		r.Close()
		w.Close()
		return nil, err
	}
	tr.Sealed = sealed
	b := &Binary{Argv: plan.Argv, Output: w, Tracker: tr, msgs: msgs, done: make(chan error, 1)}
	if FailFast(argv[1:]) {
		tr.FailFast(b.proc.stop(msgs))
	}
	go func() { b.done <- tr.Run() }()
	return b, nil
}

// Started hands the started binary to the tracker, which stops it under
// -test.failfast (see Tracker.FailFast).
func (b *Binary) Started(p *os.Process) {
	b.Tracker.pid.Store(int64(p.Pid))
	b.proc.started(p)
}

// Finish waits for the output, reports the tracker's findings (stale and
// bad markers) to write, and gives the exit status: 1 if nettrap failed a
// test the binary itself passed. Call it once the binary has exited.
func (b *Binary) Finish(status int, write func(audit.Record)) int {
	// A subprocess the binary left behind may hold the pipe open: wait a
	// little for EOF, as the go command's WaitDelay does, then take what
	// is there and stop reading.
	select {
	case err := <-b.done:
		if err != nil {
			fmt.Fprintf(b.msgs, "nettrap: reading the test output: %v\n", err)
		}
	case <-time.After(PipeGrace):
		fmt.Fprintf(b.msgs, "nettrap: a subprocess of the test binary still holds its output open; not waiting for it\n")
	}
	recs, err := b.Tracker.Finish()
	if err != nil {
		fmt.Fprintf(b.msgs, "nettrap: writing the test output: %v\n", err)
	}
	for _, rec := range recs {
		write(rec)
	}
	if b.Tracker.Failed() && (status == 0 || b.Tracker.Stopped()) {
		return 1 // a failed run, even if nettrap killed it under -failfast
	}
	return status
}

// process is the started binary. The tracker may want to stop it before
// the starter has it: the binary writes as soon as it runs, which can be
// before cmd.Start returns. Then the stop is carried out when it comes.
type process struct {
	mu     sync.Mutex
	p      *os.Process
	msgs   io.Writer
	killed bool // a stop was asked for
}

func (s *process) started(p *os.Process) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.p = p
	if s.killed {
		s.kill()
	}
}

// stop is the tracker's stop function. SIGKILL, as a test binary (or its
// TestMain) may catch SIGINT and SIGTERM: the tests that would have run
// are not started, as under -failfast, but TestMain's code after m.Run
// does not run either. os.Process signals through its pidfd, so a reused
// pid is never signalled.
func (s *process) stop(msgs io.Writer) func() {
	s.msgs = msgs
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.killed = true
		if s.p != nil {
			s.kill()
		}
	}
}

func (s *process) kill() {
	if err := s.p.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		fmt.Fprintf(s.msgs, "nettrap: -test.failfast: could not stop the test binary: %v\n", err)
	}
}
