package hub

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/nettrap/nettrap/audit"
	"github.com/nettrap/nettrap/guard"
)

// Client is an inner nettrap's end: it registers, then answers the outer
// nettrap's questions from an attribution (the test binary's tracker).
type Client struct {
	c      *conn
	done   chan struct{}
	served bool

	mu      sync.Mutex
	holds   map[uint64]guard.Transaction // the outer's transactions, by id
	settled chan struct{}                // closed, and replaced, when holds empties
}

// Dial connects to the outer nettrap at path and registers this process
// as the nettrap running pkg (argv0 is the test binary). It waits for the
// outer's answer, so that no call of the binary comes before the outer
// knows of this process.
func Dial(path, pkg, argv0 string, timeout time.Duration) (*Client, error) {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	nc, err := net.DialTimeout("unix", path, timeout)
	if err != nil {
		return nil, fmt.Errorf("connect to the outer nettrap: %w", err)
	}
	return register(nc, pkg, argv0, timeout)
}

func register(rw io.ReadWriteCloser, pkg, argv0 string, timeout time.Duration) (*Client, error) {
	c := newConn(rw)
	setDeadline(rw, time.Now().Add(timeout))
	err := c.send(message{Op: opRegister, Package: pkg, Argv0: argv0})
	var m message
	if err == nil {
		m, err = c.recv()
	}
	if err == nil && m.Op == opChallenge {
		// The outer has seen this process run nettrap: prove that this
		// process reads the socket it registered on.
		if err = c.send(message{Op: opConfirm, Nonce: m.Nonce}); err == nil {
			m, err = c.recv()
		}
	}
	if err == nil && m.Op != opOK {
		err = fmt.Errorf("the outer nettrap refused: %s %s", m.Op, m.Error)
	}
	if err != nil {
		c.close()
		return nil, fmt.Errorf("register with the outer nettrap: %w", err)
	}
	setDeadline(rw, time.Time{})
	return &Client{c: c, done: make(chan struct{}), holds: map[uint64]guard.Transaction{}, settled: make(chan struct{})}, nil
}

// Serve carries the outer's transactions to a in the background until
// the connection ends. a.Begin is called with a nil call: the outer has
// it.
func (cl *Client) Serve(a guard.Attribution) {
	cl.served = true
	go func() {
		defer close(cl.done)
		defer cl.releaseAll()
		for {
			m, err := cl.c.recv()
			if err != nil {
				return
			}
			if err := cl.answer(a, m); err != nil {
				cl.c.close()
				return
			}
		}
	}()
}

func (cl *Client) answer(a guard.Attribution, m message) error {
	switch m.Op {
	case opBegin:
		tx := a.Begin(nil)
		w := tx.Who()
		cl.mu.Lock()
		cl.holds[m.ID] = tx
		cl.mu.Unlock()
		return cl.c.send(message{Op: opBegin, ID: m.ID, Who: &w})
	case opEnd:
		cl.mu.Lock()
		tx, ok := cl.holds[m.ID]
		cl.mu.Unlock()
		if ok {
			for _, r := range m.Reports {
				tx.Report(r.Record, r.Line)
			}
			tx.End()
			cl.drop(m.ID)
		}
		return cl.c.send(message{Op: opEnded, ID: m.ID})
	}
	return fmt.Errorf("%w: unexpected %q", errProtocol, m.Op)
}

// drop forgets a transaction once its reports are in, and wakes Settle
// when none is left.
func (cl *Client) drop(id uint64) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	delete(cl.holds, id)
	if len(cl.holds) == 0 {
		close(cl.settled)
		cl.settled = make(chan struct{})
	}
}

// Settle waits, at most d, until no transaction of the outer is open. The
// binary can exit while one of its calls is still being decided (another
// thread ended the process): the outer then still sends the verdict, and
// it must reach the test's report before the inner finishes rendering it,
// or the denial is lost. It reports whether every transaction ended.
func (cl *Client) Settle(d time.Duration) bool {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		cl.mu.Lock()
		open, settled := len(cl.holds), cl.settled
		cl.mu.Unlock()
		if open == 0 {
			return true
		}
		select {
		case <-settled:
		case <-cl.done:
			return true // the outer went away: releaseAll ended them
		case <-deadline.C:
			return false
		}
	}
}

// releaseAll ends the transactions whose end will never come (the outer
// went away): the output must not stay held.
func (cl *Client) releaseAll() {
	cl.mu.Lock()
	holds := cl.holds
	cl.holds = map[uint64]guard.Transaction{}
	cl.mu.Unlock()
	for _, tx := range holds {
		tx.End()
	}
}

// Record hands a record of the inner's own (a stale marker) to the outer,
// which writes the audit trail.
func (cl *Client) Record(rec audit.Record) error {
	return cl.c.send(message{Op: opRecord, Record: &rec})
}

// Close ends the connection and waits for Serve to stop. It half-closes
// first and waits for the outer to close its end: the outer checks at
// every message that the sender still runs nettrap, so this process must
// not exit before the outer has read the records it sent last.
func (cl *Client) Close() error {
	if cw, ok := cl.c.rw.(interface{ CloseWrite() error }); ok && cl.served && cw.CloseWrite() == nil {
		select {
		case <-cl.done: // the outer read everything and closed
		case <-time.After(DefaultTimeout):
		}
	}
	err := cl.c.close()
	if !cl.served {
		return err
	}
	select {
	case <-cl.done:
	case <-time.After(DefaultTimeout):
		return errors.New("hub client: serve did not stop")
	}
	return err
}
