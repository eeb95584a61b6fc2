package hub

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/nettrap/nettrap/audit"
	"github.com/nettrap/nettrap/decision"
	"github.com/nettrap/nettrap/guard"
	"github.com/nettrap/nettrap/procfs"
	"github.com/nettrap/nettrap/tmpdir"
)

// DefaultTimeout bounds every wait for an inner nettrap: a confined thread
// waits that long at most, then its call counts as unmarked.
const DefaultTimeout = 10 * time.Second

// maxDepth bounds the walk up the process tree.
const maxDepth = 1024

// Server is the outer nettrap's end: it accepts inner nettraps and
// implements guard.Attribution by asking the inner nettrap above the
// calling process. Calls from processes under no inner get generic
// attribution (the zero Who: pid and argv0).
type Server struct {
	// Messages gets the "nettrap: …" lines the guard leaves to
	// attribution: denials of processes under no inner, and of inners
	// that could not be told.
	Messages io.Writer
	// Records writes the records inner nettraps send (stale markers).
	Records func(audit.Record)
	// Timeout bounds each wait for an inner; 0 means DefaultTimeout.
	Timeout time.Duration
	// Path is the socket; it lies in a directory only we can enter.
	Path string
	// Sealed (--sealed): inners name tests and nothing more. Their
	// "marked" reaches a sealed policy, which denies; of the records they
	// send only bad markers are kept (see innerRecord). Set before the
	// confined command starts.
	Sealed bool
	// Toolchain (`nettrap -- go test` with the test cache, where the go
	// command itself is confined): IsGo tells whether a pid is the go
	// command. A call from under it but under no inner nettrap is the
	// toolchain's (module downloads, VCS fetches): policy.Context
	// Toolchain. Under Sealed only the go command's own calls are; its
	// other children get generic attribution. Set before the command
	// starts.
	IsGo func(pid int) bool
	// GoReachable: the tests could write into the go command (no
	// Landlock domain nests them below its own; see package landlock).
	// Its calls are then the toolchain's only until the first inner
	// registers, before which no test binary has run: a go command
	// the tests may have taken over is never let through for who it is.
	GoReachable bool

	// shown are the lines shown on Messages, each once (guard.Lines).
	shown guard.Lines

	dir    string
	ln     net.Listener
	parent func(pid int) int // the process tree; tests replace it
	exe    string            // the nettrap executable; tests replace it
	wg     sync.WaitGroup

	mu     sync.Mutex
	inners map[int]*inner // by pid
	// dropped are the pids of inners whose connection ended: a test
	// binary they leave running is still no part of the toolchain.
	dropped    map[int]bool
	registered int
	lost       int
	closed     bool
	closeOnce  sync.Once
	closeErr   error
}

// inner is one registered inner nettrap.
type inner struct {
	pid     int
	pkg     string
	argv0   string
	c       *conn
	dead    chan struct{} // closed when the connection is gone
	mu      sync.Mutex
	nextID  uint64
	waiting map[uint64]chan message
}

// Listen opens the socket in a new private directory and starts
// accepting inner nettraps.
func Listen() (*Server, error) { return listen(nil) }

// listen is Listen, with configure (tests) run before the first accept.
func listen(configure func(*Server)) (*Server, error) {
	// Made by tmpdir (mode 0700), so that the directory of a nettrap
	// killed by a signal is removed by the next one.
	dir, err := tmpdir.Make("nettrap-hub-")
	if err != nil {
		return nil, fmt.Errorf("hub directory: %w", err)
	}
	path := filepath.Join(dir, "hub.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("hub socket: %w", err)
	}
	if err := passCred(ln.(*net.UnixListener)); err != nil {
		ln.Close()
		os.RemoveAll(dir)
		return nil, fmt.Errorf("hub socket: %w", err)
	}
	s := &Server{Path: path, dir: dir, ln: ln, parent: procfs.ParentPID, exe: procfs.SelfPath("exe"),
		inners: map[int]*inner{}, dropped: map[int]bool{}}
	if configure != nil {
		configure(s)
	}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

func (s *Server) timeout() time.Duration {
	if s.Timeout > 0 {
		return s.Timeout
	}
	return DefaultTimeout
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.handle(nc)
		}()
	}
}

// handle identifies who connected nc and serves it. Identifying may wait
// for the first bytes (firstWriter), so it runs here, off the accept
// loop, under the hub's timeout.
func (s *Server) handle(nc net.Conn) {
	setDeadline(nc, time.Now().Add(s.timeout()))
	p, cc, err := s.identify(nc)
	switch {
	case errors.Is(err, io.EOF):
		nc.Close() // closed before a word: ServedByAncestor's probe
	case err != nil:
		s.notef("refused a connection to the hub: %v", err)
		nc.Close()
	default:
		s.serve(newConn(cc), p)
	}
}

// serve registers the inner nettrap of p and then reads its messages
// until it goes away. Every message is checked: written by p (credConn),
// which still runs nettrap.
func (s *Server) serve(c *conn, p peer) {
	defer c.close()
	pid := p.pid
	setDeadline(c.rw, time.Now().Add(s.timeout()))
	m, ok := s.register(c, p)
	if !ok {
		return
	}
	in := &inner{pid: pid, pkg: m.Package, argv0: m.Argv0, c: c,
		dead: make(chan struct{}), waiting: map[uint64]chan message{}}
	if !s.add(in) {
		c.send(message{Op: opError, Error: "the run is over"})
		return
	}
	defer s.remove(in)
	if err := c.send(message{Op: opOK}); err != nil {
		return
	}
	setDeadline(c.rw, time.Time{})
	for {
		m, err := s.recvFrom(c, p, true)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				s.notef("the nettrap running %s (pid %d): %v", in.pkg, pid, err)
			}
			return
		}
		switch m.Op {
		case opRecord:
			if rec, ok := s.innerRecord(in.pkg, m.Record); ok {
				s.Records(rec)
			}
		case opBegin, opEnded:
			in.deliver(m)
		default:
			s.notef("the nettrap running %s (pid %d): %v: unexpected %q", in.pkg, pid, errProtocol, m.Op)
			return
		}
	}
}

func (s *Server) add(in *inner) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.inners[in.pid] = in
	s.registered++
	return true
}

// remove forgets an inner whose connection ended, and fails what waits
// on it.
func (s *Server) remove(in *inner) {
	s.mu.Lock()
	if s.inners[in.pid] == in {
		delete(s.inners, in.pid)
		s.dropped[in.pid] = true
	}
	s.mu.Unlock()
	close(in.dead)
}

// Registered tells how many inner nettraps registered so far.
func (s *Server) Registered() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.registered
}

// Close stops accepting, drops every inner and removes the socket. It may
// be called more than once.
func (s *Server) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.close() })
	return s.closeErr
}

func (s *Server) close() error {
	s.mu.Lock()
	s.closed = true
	conns := make([]*conn, 0, len(s.inners))
	for _, in := range s.inners {
		conns = append(conns, in.c)
	}
	s.mu.Unlock()
	err := s.ln.Close()
	for _, c := range conns {
		c.close()
	}
	s.wg.Wait()
	return errors.Join(err, os.RemoveAll(s.dir))
}

// Begin implements guard.Attribution. A call from under an inner nettrap
// is a transaction with that inner, carried over its socket: begin (the
// inner holds its test output and says who runs), then end with the
// call's reports (the inner puts them under the test and lets go). A call
// from under no inner is a process's own (guard.Generic); one whose inner
// cannot be asked counts as made by no test, and its denials fail the run
// (Lost).
func (s *Server) Begin(c *decision.Call) guard.Transaction {
	return s.begin(c.Task.Caller().PID)
}

// begin is Begin for a call of process pid.
func (s *Server) begin(pid int) guard.Transaction {
	in, depth := s.find(pid)
	if in == nil {
		if s.toolchain(pid) {
			return toolchainTransaction{}
		}
		return guard.Generic{Messages: s.Messages, Once: &s.shown}.Begin(nil)
	}
	r, err := in.ask(message{Op: opBegin}, s.timeout())
	if err == nil && (r.Op != opBegin || r.Who == nil) {
		err = fmt.Errorf("%w: answer %q to begin", errProtocol, r.Op)
		in.c.close()
	}
	if err != nil {
		s.notef("no answer from the nettrap running %s (pid %d): %v; the call counts as made by no test, unmarked", in.pkg, in.pid, err)
		return &remote{s: s, who: guard.Who{Package: in.pkg}, ended: true}
	}
	who := *r.Who
	if depth == 0 {
		// The inner's child: the test binary itself, not a process
		// it started (guard.Who.BinaryPID).
		who.BinaryPID = pid
	}
	return &remote{s: s, in: in, id: r.ID, who: who}
}

// remote is a call's transaction with the inner nettrap above its caller.
type remote struct {
	s       *Server
	in      *inner // nil: the inner could not be asked
	id      uint64
	who     guard.Who
	mu      sync.Mutex
	reports []Report
	ended   bool // End was called, or the inner is lost: report here
}

func (t *remote) Who() guard.Who { return t.who }

// Report keeps the call's reports for End; after it, or for a lost inner,
// a denial is shown here and fails the run.
func (t *remote) Report(rec audit.Record, line string) {
	t.mu.Lock()
	ended := t.ended
	if !ended {
		t.reports = append(t.reports, Report{Record: rec, Line: line})
	}
	t.mu.Unlock()
	if ended {
		t.s.lostReport(Report{Record: rec, Line: line})
	}
}

// End sends the call's reports to the inner that holds its output and
// waits until the inner has reported them.
func (t *remote) End() {
	t.mu.Lock()
	if t.ended {
		t.mu.Unlock()
		return
	}
	t.ended = true
	reports := t.reports
	t.mu.Unlock()
	r, err := t.in.ask(message{Op: opEnd, ID: t.id, Reports: reports}, t.s.timeout())
	if err == nil && r.Op != opEnded {
		err = fmt.Errorf("%w: answer %q to end", errProtocol, r.Op)
		t.in.c.close()
	}
	if err != nil {
		t.s.notef("could not tell the nettrap running %s (pid %d) of a verdict: %v", t.in.pkg, t.in.pid, err)
		for _, rep := range reports {
			t.s.lostReport(rep)
		}
	}
}

// lostReport shows a denial no inner could put under its test, and counts
// it: no test failed for it, so the run must fail instead. A would-be
// denial's line is shown too, and counts for nothing.
func (s *Server) lostReport(rep Report) {
	if rep.Record.Decision == audit.WouldDeny && rep.Line != "" {
		// The inner would have shown it in the test's output
		// (Who.ShowsAudit): the line is not lost, nothing fails.
		if s.shown.First(rep.Line) {
			fmt.Fprintln(s.Messages, rep.Line)
		}
		return
	}
	if rep.Record.Decision != audit.Denied {
		return
	}
	if rep.Line != "" && s.shown.First(rep.Line) {
		fmt.Fprintln(s.Messages, rep.Line)
	}
	s.mu.Lock()
	s.lost++
	s.mu.Unlock()
}

// Lost tells how many denials came from under an inner nettrap that could
// not be asked or told: no test failed for them.
func (s *Server) Lost() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lost
}

// find returns the nearest registered inner above pid: the nettrap whose
// test binary (or a subprocess of it) made the call. An inner's own calls
// are not asked about (it would be asked while it waits in the call).
func (s *Server) find(pid int) (*inner, int) {
	s.mu.Lock()
	n := len(s.inners)
	s.mu.Unlock()
	if n == 0 || pid <= 0 {
		return nil, 0
	}
	p := pid
	for i := 0; i < maxDepth; i++ {
		if p = s.parent(p); p <= 1 {
			return nil, 0
		}
		s.mu.Lock()
		in := s.inners[p]
		s.mu.Unlock()
		if in != nil {
			return in, i
		}
	}
	return nil, 0
}

func (s *Server) notef(format string, a ...any) {
	if s.Messages != nil {
		fmt.Fprintf(s.Messages, "nettrap: "+format+"\n", a...)
	}
}

// ask sends m with a new id (or m.ID when set) and waits, bounded, for
// the answer with the same id. On timeout the inner is dropped: its
// later calls then fail fast instead of waiting again.
func (in *inner) ask(m message, timeout time.Duration) (message, error) {
	ch := make(chan message, 1)
	in.mu.Lock()
	if m.ID == 0 {
		in.nextID++
		m.ID = in.nextID
	}
	in.waiting[m.ID] = ch
	in.mu.Unlock()
	defer func() {
		in.mu.Lock()
		delete(in.waiting, m.ID)
		in.mu.Unlock()
	}()
	select {
	case <-in.dead:
		return message{}, errors.New("it is gone")
	default:
	}
	setWriteDeadline(in.c.rw, time.Now().Add(timeout))
	if err := in.c.send(m); err != nil {
		in.c.close()
		return message{}, err
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case r := <-ch:
		return r, nil
	case <-in.dead:
		return message{}, errors.New("it went away")
	case <-timer.C:
		in.c.close()
		return message{}, fmt.Errorf("no answer in %v", timeout)
	}
}

// deliver hands an answer to the ask waiting for it; a late answer (after
// a timeout) has no one waiting and is dropped.
func (in *inner) deliver(m message) {
	in.mu.Lock()
	ch := in.waiting[m.ID]
	in.mu.Unlock()
	if ch != nil {
		select {
		case ch <- m:
		default:
		}
	}
}

// innerRecord is what the hub keeps of a record an inner sent: its
// findings about the tests of its package (stale and bad markers). Under
// Sealed the inner runs untrusted tests, whose output it read: a stale
// marker means nothing when markers open nothing, and is dropped; a bad
// marker only ever fails a test, so it is kept, with the package the inner
// registered (the test named cannot widen anything).
func (s *Server) innerRecord(pkg string, rec *audit.Record) (audit.Record, bool) {
	if rec == nil || s.Records == nil {
		return audit.Record{}, false
	}
	if !s.Sealed {
		return *rec, true
	}
	if rec.Decision != audit.BadMarker {
		return audit.Record{}, false
	}
	return audit.Record{Package: pkg, Test: rec.Test, Decision: audit.BadMarker,
		MarkerValue: rec.MarkerValue, Reason: rec.Reason}, true
}
