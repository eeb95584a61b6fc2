package hub

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nettrap/nettrap/audit"
	"github.com/nettrap/nettrap/decision"
	"github.com/nettrap/nettrap/guard"
	"github.com/nettrap/nettrap/policy"
	"github.com/nettrap/nettrap/procfs"
)

// fakeAttr is the inner's attribution: its transactions answer with who
// and log what happens, in order.
type fakeAttr struct {
	who   guard.Who
	block chan struct{} // when set, Begin waits on it
	mu    sync.Mutex
	log   []string
	recs  []audit.Record
	rel   chan struct{} // closed by the first End
	once  sync.Once
}

func newFakeAttr(w guard.Who) *fakeAttr { return &fakeAttr{who: w, rel: make(chan struct{})} }

func (f *fakeAttr) add(s string) {
	f.mu.Lock()
	f.log = append(f.log, s)
	f.mu.Unlock()
}

func (f *fakeAttr) Begin(c *decision.Call) guard.Transaction {
	f.add("begin")
	if f.block != nil {
		<-f.block
	}
	return &fakeTransaction{f: f, who: f.who}
}

type fakeTransaction struct {
	f   *fakeAttr
	who guard.Who
}

func (a *fakeTransaction) Who() guard.Who { return a.who }

func (a *fakeTransaction) Report(rec audit.Record, line string) {
	a.f.mu.Lock()
	defer a.f.mu.Unlock()
	a.f.log = append(a.f.log, "report "+a.who.Test+" "+rec.Dest+" "+line)
	a.f.recs = append(a.f.recs, rec)
}

func (a *fakeTransaction) End() {
	a.f.add("end")
	a.f.once.Do(func() { close(a.f.rel) })
}

func (f *fakeAttr) events() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return strings.Join(f.log, "; ")
}

// syncBuf is a Messages writer safe for the server's goroutines.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// child is the fake pid of a test binary under this process, the inner.
const child = 1 << 30

// newPair starts a server and registers this process as an inner whose
// test binary is child.
func newPair(t *testing.T, a guard.Attribution) (*Server, *Client, *syncBuf) {
	t.Helper()
	s, err := Listen()
	if err != nil {
		t.Fatal(err)
	}
	msgs := &syncBuf{}
	s.Messages = msgs
	self := os.Getpid()
	s.parent = func(pid int) int {
		if pid == child {
			return self
		}
		return procfs.ParentPID(pid)
	}
	t.Cleanup(func() { s.Close() })
	cl, err := Dial(s.Path, "example.com/p", "p.test", 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	if s.Registered() != 1 {
		t.Fatalf("registered %d, want 1 once Dial returned", s.Registered())
	}
	if a != nil {
		cl.Serve(a)
	}
	return s, cl, msgs
}

func TestBeginReportEnd(t *testing.T) {
	fa := newFakeAttr(guard.Who{Package: "example.com/p", Test: "TestLeak"})
	s, _, msgs := newPair(t, fa)
	tx := s.begin(child)
	if w := tx.Who(); w.Test != "TestLeak" || w.Package != "example.com/p" {
		t.Fatalf("who = %+v, want the inner's answer", w)
	}
	rec := audit.Record{TID: child + 1, Dest: "203.0.113.7:443", Decision: audit.Denied}
	tx.Report(rec, "nettrap: blocked")
	if got := fa.events(); got != "begin" {
		t.Errorf("before End the inner saw %q, want only begin: the reports go with the end", got)
	}
	tx.End()
	// End returned: the inner has reported and let go of the hold.
	want := "begin; report TestLeak 203.0.113.7:443 nettrap: blocked; end"
	if got := fa.events(); got != want {
		t.Errorf("inner saw %q, want %q", got, want)
	}
	if msgs.String() != "" {
		t.Errorf("the outer printed %q; the inner renders the line under the test", msgs.String())
	}
}

func TestSeveralReportsOneVerdict(t *testing.T) {
	fa := newFakeAttr(guard.Who{Package: "example.com/p", Test: "TestMulti"})
	s, _, _ := newPair(t, fa)
	tx := s.begin(child)
	for _, d := range []string{"192.0.2.1:53", "192.0.2.2:53"} {
		tx.Report(audit.Record{TID: 7, Dest: d, Decision: audit.Denied}, "line "+d)
	}
	tx.End()
	if len(fa.recs) != 2 || fa.recs[0].Dest != "192.0.2.1:53" || fa.recs[1].Dest != "192.0.2.2:53" {
		t.Errorf("inner got records %+v, want both destinations in order", fa.recs)
	}
}

func TestGenericCaller(t *testing.T) {
	fa := newFakeAttr(guard.Who{Test: "TestX"})
	s, _, msgs := newPair(t, fa)
	// A process not under the inner: pid 1's parent is 0.
	tx := s.begin(1)
	if w := tx.Who(); w.Test != "" || w.Package != "" || w.Marked || len(w.Candidates) > 0 {
		t.Errorf("who = %+v, want the zero Who (by process)", w)
	}
	tx.Report(audit.Record{TID: 1, Decision: audit.Denied}, "nettrap: blocked by pid 1 init")
	tx.Report(audit.Record{TID: 1, Decision: audit.WouldDeny}, "nettrap: audit: would block")
	tx.End()
	if got := msgs.String(); got != "nettrap: blocked by pid 1 init\n" {
		t.Errorf("messages %q: want the denial line only (the guard prints the others)", got)
	}
	if got := fa.events(); got != "" {
		t.Errorf("the inner was asked about a process not under it: %q", got)
	}
	if s.Lost() != 0 {
		t.Errorf("lost %d: a process under no inner is attributed by process, not lost", s.Lost())
	}
	// The same line again (a retry, a lookup's next query): shown once.
	tx = s.begin(1)
	tx.Report(audit.Record{TID: 1, Decision: audit.Denied}, "nettrap: blocked by pid 1 init")
	tx.End()
	if got := msgs.String(); got != "nettrap: blocked by pid 1 init\n" {
		t.Errorf("messages %q: want the repeated line once", got)
	}
}

func TestInnerItselfIsNotAsked(t *testing.T) {
	fa := newFakeAttr(guard.Who{Test: "TestX"})
	s, _, _ := newPair(t, fa)
	if in, _ := s.find(os.Getpid()); in != nil {
		t.Errorf("find(inner's own pid) = pid %d; the inner must not be asked about its own calls", in.pid)
	}
	if in, depth := s.find(child); in == nil || in.pid != os.Getpid() || depth != 0 {
		t.Errorf("find(child) = %v at depth %d, want the inner, the child's parent", in, depth)
	}
}

func TestTimeoutFailsClosed(t *testing.T) {
	fa := newFakeAttr(guard.Who{Package: "example.com/p", Test: "TestMarked", Context: policy.Context{Marked: true}})
	fa.block = make(chan struct{})
	defer close(fa.block)
	s, _, msgs := newPair(t, fa)
	s.Timeout = 50 * time.Millisecond
	tx := s.begin(child)
	if w := tx.Who(); w.Marked || w.Test != "" || w.Package != "example.com/p" {
		t.Errorf("who after no answer = %+v, want unmarked, no test, the inner's package", w)
	}
	tx.Report(audit.Record{TID: 9, Decision: audit.Denied}, "nettrap: blocked by pid 9")
	tx.End()
	out := msgs.String()
	if !strings.Contains(out, "no answer from the nettrap running example.com/p") || !strings.Contains(out, "nettrap: blocked by pid 9") {
		t.Errorf("messages %q: want the missing answer and the denial said", out)
	}
	if s.Lost() != 1 {
		t.Errorf("lost denials %d, want 1: no test failed for it", s.Lost())
	}
	// The inner is dropped: the next call does not wait again.
	s.Timeout = time.Hour
	tx = s.begin(child)
	if w := tx.Who(); w.Marked {
		t.Errorf("second who = %+v after the inner was dropped, want unmarked", w)
	}
	tx.End()
}

func TestInnerGoneBeforeVerdict(t *testing.T) {
	fa := newFakeAttr(guard.Who{Test: "TestGone"})
	s, cl, msgs := newPair(t, fa)
	tx := s.begin(child)
	cl.Close()
	<-fa.rel // the inner let go of its hold when the connection ended
	tx.Report(audit.Record{TID: 11, Decision: audit.Denied}, "nettrap: blocked during TestGone")
	tx.Report(audit.Record{TID: 11, Decision: audit.WouldDeny}, "nettrap: audit: would block during TestGone")
	tx.End()
	if out := msgs.String(); !strings.Contains(out, "could not tell the nettrap running") || !strings.Contains(out, "nettrap: blocked during TestGone") ||
		!strings.Contains(out, "nettrap: audit: would block during TestGone") {
		t.Errorf("messages %q: want the lost verdict and its line, and the would-be denial's line", out)
	}
	if s.Lost() != 1 {
		t.Errorf("lost denials %d, want 1 (a would-be denial is none)", s.Lost())
	}
	// The same line again (the inner dropped, the call is the
	// process's now): not shown again.
	tx = s.begin(child)
	tx.Report(audit.Record{TID: 11, Decision: audit.Denied}, "nettrap: blocked during TestGone")
	tx.End()
	if n := strings.Count(msgs.String(), "nettrap: blocked during TestGone"); n != 1 {
		t.Errorf("line shown %d times, want once:\n%s", n, msgs.String())
	}
}

// Who crosses the socket whole: the active tests (for blame by the
// caller's stack) and whether the inner shows would-be denials.
func TestWhoCarriesActiveAndShowsAudit(t *testing.T) {
	fa := newFakeAttr(guard.Who{Package: "example.com/p", Test: "TestB", Active: []string{"TestA", "TestB"}, ShowsAudit: true})
	s, _, _ := newPair(t, fa)
	tx := s.begin(child)
	w := tx.Who()
	tx.End()
	if !w.ShowsAudit || len(w.Active) != 2 || w.Active[0] != "TestA" {
		t.Errorf("who across the hub %+v, want Active [TestA TestB] and ShowsAudit", w)
	}
}

func TestRecordsReachOuter(t *testing.T) {
	got := make(chan audit.Record, 1)
	s, err := Listen()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Records = func(r audit.Record) { got <- r }
	cl, err := Dial(s.Path, "example.com/p", "p.test", 0)
	if err != nil {
		t.Fatal(err)
	}
	want := audit.Record{Package: "example.com/p", Test: "TestStale", Marked: true, Decision: "stale-marker"}
	if err := cl.Record(want); err != nil {
		t.Fatal(err)
	}
	if r := <-got; r.Test != want.Test || r.Decision != want.Decision || !r.Marked {
		t.Errorf("outer got %+v, want %+v", r, want)
	}
	cl.Close()
}

// Under --sealed a stale marker of an inner is dropped (markers open
// nothing), and a bad marker is kept, under the package the inner
// registered whatever the record says. A begin-end round trip after them
// shows both were read.
func TestSealedKeepsOnlyBadMarkers(t *testing.T) {
	got := make(chan audit.Record, 2)
	s, err := listen(func(s *Server) {
		s.Sealed = true
		s.Records = func(r audit.Record) { got <- r }
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cl, err := Dial(s.Path, "example.com/p", "p.test", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.Record(audit.Record{Test: "TestStale", Decision: audit.StaleMarker}); err != nil {
		t.Fatal(err)
	}
	bad := audit.Record{Package: "example.com/other", Test: "TestOdd", Decision: audit.BadMarker,
		MarkerValue: "yes", Reason: "unknown value", PID: 1, Marked: true}
	if err := cl.Record(bad); err != nil {
		t.Fatal(err)
	}
	fa := newFakeAttr(guard.Who{Test: "TestX"})
	cl.Serve(fa)
	s.parent = func(int) int { return os.Getpid() }
	s.begin(child).End()
	want := audit.Record{Package: "example.com/p", Test: "TestOdd", Decision: audit.BadMarker,
		MarkerValue: "yes", Reason: "unknown value"}
	select {
	case r := <-got:
		if !reflect.DeepEqual(r, want) {
			t.Errorf("a sealed outer kept %+v, want %+v", r, want)
		}
	default:
		t.Fatal("a sealed outer dropped the inner's bad marker")
	}
	select {
	case r := <-got:
		t.Errorf("a sealed outer wrote the inner's record %+v", r)
	default:
	}
}

// dialRaw opens a hub and a raw connection to it, as a misbehaving client.
func dialRaw(t *testing.T) (*Server, net.Conn) {
	t.Helper()
	s, err := Listen()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	nc, err := net.Dial("unix", s.Path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return s, nc
}

func TestRegisterMustComeFirst(t *testing.T) {
	s, nc := dialRaw(t)
	c := newConn(nc)
	if err := c.send(message{Op: opBegin, ID: 1}); err != nil {
		t.Fatal(err)
	}
	m, err := c.recv()
	if err != nil || m.Op != opError {
		t.Fatalf("answer %+v, %v; want an error message", m, err)
	}
	if _, err := c.recv(); !errors.Is(err, io.EOF) {
		t.Errorf("after the error: %v, want EOF", err)
	}
	if s.Registered() != 0 {
		t.Errorf("registered %d, want 0", s.Registered())
	}
}

func TestGarbageClosesConnection(t *testing.T) {
	_, nc := dialRaw(t)
	nc.Write([]byte("not json\n"))
	c := newConn(nc)
	if m, err := c.recv(); err != nil || m.Op != opError {
		t.Fatalf("answer to garbage %+v, %v; want an error message", m, err)
	}
	if _, err := c.recv(); !errors.Is(err, io.EOF) {
		t.Errorf("after garbage: %v, want EOF", err)
	}
}

// TestSilentConnections: a connection closed before a word (an inner's
// ServedByAncestor probe) is no refusal, and one that stays silent does
// not hold up the next inner's registration.
func TestSilentConnections(t *testing.T) {
	s, err := Listen()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	msgs := &syncBuf{}
	s.Messages = msgs
	silent, err := net.Dial("unix", s.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	probe, err := net.Dial("unix", s.Path)
	if err != nil {
		t.Fatal(err)
	}
	probe.Close()
	cl, err := Dial(s.Path, "example.com/p", "p.test", 5*time.Second)
	if err != nil {
		t.Fatalf("an inner after a silent connection: %v", err)
	}
	defer cl.Close()
	if s.Registered() != 1 {
		t.Errorf("registered %d, want 1", s.Registered())
	}
	if strings.Contains(msgs.String(), "refused") {
		t.Errorf("the hub refused a connection: %s", msgs)
	}
}

func TestRegisterRefusedAfterClose(t *testing.T) {
	s, err := Listen()
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := Dial(s.Path, "p", "p.test", 0); err == nil {
		t.Error("Dial after Close succeeded")
	}
	if _, err := os.Stat(s.Path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket left behind: %v", err)
	}
}

func TestSocketDirIsPrivate(t *testing.T) {
	s, err := Listen()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fi, err := os.Stat(s.dir)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o700 {
		t.Errorf("socket directory mode %v, want 0700", perm)
	}
}

// rwc is a ReadWriteCloser over fixed input.
type rwc struct {
	in  io.Reader
	out bytes.Buffer
}

func (r *rwc) Read(p []byte) (int, error)  { return r.in.Read(p) }
func (r *rwc) Write(p []byte) (int, error) { return r.out.Write(p) }
func (r *rwc) Close() error                { return nil }

func TestRecvErrors(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     error
	}{
		{"eof", "", io.EOF},
		{"truncated", `{"op":"begin"`, errProtocol},
		{"not json", "hello\n", errProtocol},
		{"no op", "{}\n", errProtocol},
		{"too long", `{"op":"` + strings.Repeat("x", maxLine+1) + "\"}\n", errProtocol},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newConn(&rwc{in: strings.NewReader(tc.in)})
			if _, err := c.recv(); !errors.Is(err, tc.want) {
				t.Errorf("recv = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestClientRejectsUnknownOp(t *testing.T) {
	cl := &Client{c: newConn(&rwc{in: strings.NewReader("")}), holds: map[uint64]guard.Transaction{}}
	if err := cl.answer(newFakeAttr(guard.Who{}), message{Op: opRecord}); !errors.Is(err, errProtocol) {
		t.Errorf("answer(record) = %v, want a protocol error", err)
	}
}

func TestEndWithoutBeginIsAnswered(t *testing.T) {
	out := &rwc{in: strings.NewReader("")}
	cl := &Client{c: newConn(out), holds: map[uint64]guard.Transaction{}}
	fa := newFakeAttr(guard.Who{})
	if err := cl.answer(fa, message{Op: opEnd, ID: 5}); err != nil {
		t.Fatal(err)
	}
	if got := out.out.String(); got != `{"op":"ended","id":5}`+"\n" {
		t.Errorf("sent %q, want ended 5", got)
	}
	if fa.events() != "" {
		t.Errorf("attribution touched: %q", fa.events())
	}
}

func TestParentPIDOfSelf(t *testing.T) {
	if got := procfs.ParentPID(os.Getpid()); got != os.Getppid() {
		t.Errorf("procfs.ParentPID(self) = %d, want %d", got, os.Getppid())
	}
	if got := procfs.ParentPID(-1); got != 0 {
		t.Errorf("procfs.ParentPID(-1) = %d, want 0", got)
	}
}

// Only a process running the nettrap executable may register: a confined
// test that forged the protocol could otherwise vouch for its children.
func TestIsNettrap(t *testing.T) {
	if !runs(os.Getpid(), "/proc/self/exe") {
		t.Error("this process is not recognized as running its own executable")
	}
	sleep := exec.Command("sleep", "5")
	if err := sleep.Start(); err != nil {
		t.Skip("no sleep:", err)
	}
	defer func() { sleep.Process.Kill(); sleep.Wait() }()
	if runs(sleep.Process.Pid, "/proc/self/exe") {
		t.Error("a sleep process passes for nettrap")
	}
}

// A binary can exit while one of its calls is still being decided: the
// inner must wait for that verdict before it finishes the test's report.
func TestSettleWaitsForOpenVerdicts(t *testing.T) {
	fa := newFakeAttr(guard.Who{Package: "example.com/p", Test: "TestLate"})
	s, cl, _ := newPair(t, fa)
	if !cl.Settle(time.Second) {
		t.Fatal("Settle with nothing open = false, want true at once")
	}
	tx := s.begin(child)
	tx.Report(audit.Record{TID: 7, Dest: "203.0.113.9:443", Decision: audit.Denied}, "blocked")
	if cl.Settle(50 * time.Millisecond) {
		t.Fatal("Settle = true while the outer's transaction is open")
	}
	settled := make(chan bool, 1)
	go func() { settled <- cl.Settle(10 * time.Second) }()
	select {
	case <-settled:
		t.Fatal("Settle returned before the verdict came")
	case <-time.After(100 * time.Millisecond):
	}
	tx.End()
	if !<-settled {
		t.Fatal("Settle = false after the verdict came")
	}
	if got, want := fa.events(), "begin; report TestLate 203.0.113.9:443 blocked; end"; got != want {
		t.Errorf("inner saw %q, want %q before Settle returned", got, want)
	}
}
