package gotest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/audit"
	"github.com/nettrap/nettrap/decision"
	"github.com/nettrap/nettrap/guard"
	"github.com/nettrap/nettrap/policy"
	"github.com/nettrap/nettrap/teststream"
)

// The marker: t.Attr("nettrap", "network") (Go 1.25+), or, for a module
// of any Go version, t.Log("nettrap:network") (LogMarker, see logMarker).
const (
	MarkerKey   = "nettrap"
	MarkerValue = "network"
	LogMarker   = MarkerKey + ":" + MarkerValue
)

// Tracker reads a test binary's -test.v=test2json stream, knows which test
// runs at every moment, and turns denials into test failures. It
// implements guard.Attribution.
type Tracker struct {
	Package    string
	AllowTests []TestRule
	// Sealed (--sealed): the test's word counts for nothing. --allow-test
	// is not applied, the marker is still seen (so that a denial can say
	// it was ignored), and there are no stale markers: under --sealed a
	// marker opens nothing, so one that was not used hides nothing. Set it
	// before Run.
	Sealed bool

	parser   *teststream.Parser
	renderer *teststream.Renderer

	// pid is the test binary's process id once it started (Started),
	// for guard.Who.BinaryPID.
	pid atomic.Int64

	// readMu serializes reads of the pipe: the reader goroutine and the
	// deciders' drains take turns, so every byte reaches the parser once
	// and in order.
	readMu sync.Mutex
	pipe   *os.File // kept so that its finalizer does not close fd
	fd     int      // the pipe's descriptor, non-blocking
	eof    bool     // EOF seen, or Finish called: no more reads
	wake   int      // Run's eventfd, which Finish writes to end its poll; -1 when Run is not polling

	mu      sync.Mutex
	tests   []string        // every test seen, in order of start
	used    map[string]bool // marked tests (and ancestors) that made an attempt
	logged  map[string]bool // tests that logged the marker (LogMarker) while they ran
	badAttr []badAttr
	refused bool // an attempt was denied, or would be under enforce
	// linesMu guards shown, and is held from a look at it to the
	// line's rendering, so that two calls of one cause show one line.
	linesMu sync.Mutex
	// shown are the verdict lines put in the output, by test (a run of
	// it: cleared when it starts again, as under -count) or "" for the
	// package's: a repeated line (a lookup's queries, a retry loop's
	// dials, the same test, cause and place) is shown once.
	shown map[string]map[string]bool
	// verbose: the user asked for -v or -json; a verdict then shows the
	// module's frames of the caller's stack under its line (the guard
	// adds them: guard.Who.ShowsStack), and a would-be denial's line goes
	// into the test's output.
	verbose bool
}

// badAttr is a marker with an unknown value: the attribute's, or the
// logged marker's (logged).
type badAttr struct {
	test, value string
	logged      bool
}

// line is what the test's output says of a bad marker.
func (b badAttr) line() string {
	if b.logged {
		return fmt.Sprintf("nettrap: unknown marker %q logged: the marker is t.Log(%q)", MarkerKey+":"+b.value, LogMarker)
	}
	return fmt.Sprintf("nettrap: unknown value %q of the %q attribute: the marker is t.Attr(%q, %q)", b.value, MarkerKey, MarkerKey, MarkerValue)
}

// reason is a bad marker's reason in its audit record.
func (b badAttr) reason() string {
	if b.logged {
		return fmt.Sprintf("unknown marker %q logged; the marker is t.Log(%q)", MarkerKey+":"+b.value, LogMarker)
	}
	return fmt.Sprintf("unknown value %q of the %q attribute; the marker is t.Attr(%q, %q)", b.value, MarkerKey, MarkerKey, MarkerValue)
}

// NewTracker renders to w in plan.Mode what it reads from pipe (the read
// end of the binary's stdout and stderr), a stream in plan.Framing.
func NewTracker(pipe *os.File, w io.Writer, plan Plan, pkg string, allow []TestRule) (*Tracker, error) {
	// os.File.Fd puts the descriptor in blocking mode: take it once,
	// then make it non-blocking for good.
	fd := int(pipe.Fd())
	if err := unix.SetNonblock(fd, true); err != nil {
		return nil, os.NewSyscallError("fcntl(O_NONBLOCK)", err)
	}
	t := &Tracker{Package: pkg, AllowTests: allow, pipe: pipe, fd: fd, wake: -1, used: map[string]bool{},
		logged: map[string]bool{}, verbose: plan.Mode != teststream.ModeQuiet}
	t.renderer = teststream.NewRenderer(w, plan.Mode)
	t.parser = teststream.NewParserFraming(t.handle, plan.Framing)
	return t, nil
}

// FailFast makes the tracker stop the binary, by calling stop, when a test
// that nettrap failed has ended and another test starts, as the binary
// does for its own failures under -test.failfast (see
// teststream.Renderer.FailFast). Call it before Run.
func (t *Tracker) FailFast(stop func()) { t.renderer.FailFast(stop) }

// Stopped reports whether the tracker stopped the binary under -failfast:
// its exit status is then that of a failed run (1), not of the kill.
func (t *Tracker) Stopped() bool { return t.renderer.Stopped() }

// handle sees every event before the renderer: it keeps the list of
// tests and the tests that logged the marker, and fails a test whose
// marker has an unknown value.
func (t *Tracker) handle(e *teststream.Event) {
	var bad *badAttr
	switch {
	case e.Kind == teststream.KindRun:
		t.mu.Lock()
		t.tests = append(t.tests, e.Test)
		t.mu.Unlock()
		t.linesMu.Lock()
		delete(t.shown, e.Test) // a new run of the test: its lines are its own
		t.linesMu.Unlock()
	case e.Kind == teststream.KindAttr && e.Key == MarkerKey && e.Value != MarkerValue:
		bad = &badAttr{test: e.Test, value: e.Value}
	case e.Kind == teststream.KindOutput:
		bad = t.logMarker(e)
	}
	if bad != nil {
		t.mu.Lock()
		t.badAttr = append(t.badAttr, *bad)
		t.mu.Unlock()
	}
	t.renderer.Handle(e)
	if bad != nil && !t.renderer.Fail(bad.test, bad.line()) {
		t.renderer.FailPackage(strings.Replace(bad.line(), "nettrap: ", "nettrap: "+bad.test+": ", 1))
	}
}

// logMarker reads a logged marker: a line of a running test's own output
// (the stream's framing attributes it to the test, as test2json does)
// in the frame of t.Log, "    FILE:LINE: nettrap:network", the message
// being the marker and nothing else. It marks the test (and its
// subtests, as t.Attr does) from then on. t.Log works in a module of any
// Go version, where t.Attr needs a go line of 1.25 or later (go vet
// refuses it below), and needs no import of nettrap.
//
// What marks nothing: the marker's text printed (fmt.Println of
// "nettrap:network": no frame), logged among other words or on a log
// message's second line (its indent is eight spaces), printed outside a
// test or after the test's end; and another test's marker marks that
// test (the testing package names it before the line). A line that
// imitates the frame exactly is taken for the marker,
// as a printed "^V=== ATTR" line is taken for t.Attr: the stream cannot
// tell them apart. The default mode trusts the tests' code; --sealed
// (Sealed) lets no marker open anything.
//
// A logged "nettrap:WORD" with another WORD is a bad marker, reported
// like an unknown value of the attribute.
func (t *Tracker) logMarker(e *teststream.Event) *badAttr {
	if !bytes.Contains(e.Raw, []byte(": "+MarkerKey+":")) {
		return nil // most output: no need to read its frame
	}
	log, ok := teststream.LogLine(e)
	if !ok || e.Test == "" {
		return nil
	}
	value, ok := strings.CutPrefix(log.Msg, MarkerKey+":")
	if !ok || !markerWord(value) {
		return nil
	}
	if info, ok := t.parser.Test(e.Test); !ok || info.State == teststream.Done {
		return nil // output after the test's end is no word of a running test
	}
	if value != MarkerValue {
		return &badAttr{test: e.Test, value: value, logged: true}
	}
	t.mu.Lock()
	t.logged[e.Test] = true
	t.mu.Unlock()
	return nil
}

// markerWord: a logged marker's value looks like one (a word of
// letters, digits, '-' and '_'); other text after "nettrap:" is a log
// like any other.
func markerWord(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// loggedMarker: the test or an ancestor logged the marker.
func (t *Tracker) loggedMarker(test string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for depth := 0; test != "" && depth < 1000; depth++ {
		if t.logged[test] {
			return true
		}
		info, ok := t.parser.Test(test)
		if !ok {
			return false
		}
		test = info.Parent
	}
	return false
}

// Run copies the pipe into the parser until EOF, or until Finish. Reads
// are non-blocking and wait in poll, so that drain can take its turn at
// any moment. A subprocess the binary left behind may hold the pipe open
// after the binary exited: no EOF comes then, so Finish wakes the poll
// through an eventfd.
func (t *Tracker) Run() error {
	fds := []unix.PollFd{{Fd: int32(t.fd), Events: unix.POLLIN}}
	switch wake, finished := t.openWake(); {
	case finished:
		return nil
	case wake >= 0:
		defer t.closeWake()
		fds = append(fds, unix.PollFd{Fd: int32(wake), Events: unix.POLLIN})
	}
	for {
		if err := t.drain(); err != nil {
			return err
		}
		if t.isEOF() {
			return nil
		}
		if _, err := unix.Poll(fds, -1); err != nil && err != unix.EINTR {
			return os.NewSyscallError("poll", err)
		}
	}
}

// openWake makes Run's eventfd, unless Finish came first. Without one
// (no eventfd), Run ends at EOF only, as the go command's reader does.
func (t *Tracker) openWake() (fd int, finished bool) {
	t.readMu.Lock()
	defer t.readMu.Unlock()
	if t.eof {
		return -1, true
	}
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return -1, false
	}
	t.wake = fd
	return fd, false
}

// closeWake closes it under readMu, so that Finish never writes to a
// closed (or reused) descriptor.
func (t *Tracker) closeWake() {
	t.readMu.Lock()
	defer t.readMu.Unlock()
	unix.Close(t.wake)
	t.wake = -1
}

func (t *Tracker) isEOF() bool {
	t.readMu.Lock()
	defer t.readMu.Unlock()
	return t.eof
}

// drain feeds the parser everything that is in the pipe now. A thread
// stopped in an intercepted call has written all it printed before the
// call, so after drain the parser's state is the state at the call.
func (t *Tracker) drain() error {
	t.readMu.Lock()
	defer t.readMu.Unlock()
	buf := make([]byte, 64<<10)
	for !t.eof {
		n, err := unix.Read(t.fd, buf)
		switch {
		case n > 0:
			t.parser.Write(buf[:n])
		case err == unix.EAGAIN:
			return nil
		case err == unix.EINTR:
		case err != nil:
			return os.NewSyscallError("read", err)
		default:
			t.eof = true
		}
	}
	return nil
}

// Begin implements guard.Attribution. It reads what the binary wrote
// before the call, and holds the rendering of --- lines until End, so
// that a verdict can still reach the test's report. If the stream cannot
// be read, which test runs is not known: the call counts as made at
// collection time (a denial then fails the package, never nothing).
func (t *Tracker) Begin(*decision.Call) guard.Transaction {
	release := t.renderer.Hold()
	if err := t.drain(); err != nil {
		return &transaction{t: t, who: guard.Who{Package: t.Package, Test: audit.Collection,
			Context: policy.Context{Collection: true}}, release: release}
	}
	return &transaction{t: t, who: t.who(), release: release}
}

// transaction is one call's transaction with the tracker.
type transaction struct {
	t       *Tracker
	who     guard.Who
	release func()
}

func (tx *transaction) Who() guard.Who                       { return tx.who }
func (tx *transaction) Report(rec audit.Record, line string) { tx.t.report(tx.who, rec, line) }
func (tx *transaction) End()                                 { tx.release() }

// who tells which test runs now, from the stream read so far.
func (t *Tracker) who() guard.Who {
	snap := t.parser.Snapshot()
	w := guard.Who{Package: t.Package, Active: snap.Active, ShowsAudit: t.verbose, ShowsStack: t.verbose, BinaryPID: int(t.pid.Load())}
	switch {
	case snap.Collection || len(snap.Running) == 0:
		w.Test, w.Collection = audit.Collection, true
	case len(snap.Running) == 1:
		w.Test = snap.Running[0]
		w.Marked, w.Marker, w.AllowTest = t.marked(w.Test)
	default:
		w.Candidates = snap.Running
		w.Marked = true
		for _, name := range snap.Running {
			marked, marker, rules := t.marked(name)
			w.Marked = w.Marked && marked
			w.Marker = w.Marker || marker
			if marked {
				w.MarkedCandidates = append(w.MarkedCandidates, name)
			}
			for _, r := range rules {
				if !slices.Contains(w.AllowTest, r) {
					w.AllowTest = append(w.AllowTest, r)
				}
			}
		}
	}
	return w
}

// marked: the test or an ancestor carries the marker or is named by an
// --allow-test rule; marker: the marker itself; rules lists those rules
// (as written), whether or not a marker marked it too, so that a rule that
// names an attempt's test counts as used (and the reason of its allowed
// calls names them: policy.MarkedReason).
func (t *Tracker) marked(test string) (marked, marker bool, rules []string) {
	marker = t.parser.Marked(test, MarkerKey, MarkerValue) || t.loggedMarker(test)
	if t.Sealed {
		return marker, marker, nil
	}
	for _, r := range t.AllowTests {
		for name := test; name != ""; name = parentName(name) {
			if r.Match(t.Package, name) {
				rules = append(rules, r.Raw)
				break
			}
		}
	}
	return len(rules) > 0 || marker, marker, rules
}

// report is a transaction's Report: a denial fails the test that made it
// (the record's, which the caller's stack may have pinned among the
// candidates; every candidate when ambiguous) or, at collection time, the package.
// When the caller's stack showed another test's goroutine
// (rec.StartedBy), the verdict goes to that test while it runs, else to
// the package, with a line that names it: never only to the test that
// happened to run. With -v or -json a would-be denial's line goes into
// the test's output too. A line already shown for the same run of the
// same test (or for the package) is not shown again: the call failed
// nothing new, and its record is in the audit log.
func (t *Tracker) report(w guard.Who, rec audit.Record, line string) {
	if rec.Decision == audit.Denied || rec.Decision == audit.WouldDeny {
		t.mu.Lock()
		t.refused = true
		t.mu.Unlock()
	}
	switch rec.Decision {
	case audit.Allowed:
		if w.Marked {
			t.markUsed(rec)
		}
		return
	case audit.Denied:
	case audit.WouldDeny:
		if t.verbose && line != "" {
			t.show(w, rec, line)
		}
		return
	default:
		return
	}
	if rec.Left {
		// The caller left the call before it could be read (a signal
		// interrupted it): the kernel makes it again, and that call is
		// judged. The line is shown, failing nothing.
		t.renderer.Note(line)
		return
	}
	if rec.StartedBy != "" {
		// A test that had ended when the call came (as the stream told
		// the decider) fails the package, as its line says, even when
		// its end is still held unwritten: the verdict must not depend
		// on how far the output has been written.
		if rec.StartedByEnded || !t.fail(rec.StartedBy, line) {
			t.failPackage(line)
		}
		return
	}
	if w.Collection || rec.Unowned {
		// Collection time, or a goroutine the stack ties to no running
		// test (its code is another test's by name only): the package
		// carries the verdict, never the test that happened to run.
		t.failPackage(line)
		return
	}
	for _, name := range recTests(rec) {
		if !t.fail(name, line) {
			t.failPackage(line)
		}
	}
}

// fail fails test with line (renderer.Fail), showing the line once per
// run of the test: a test that showed it is failed already. It reports
// false, as Fail does, when the test is not running and never showed it.
func (t *Tracker) fail(test, line string) bool {
	t.linesMu.Lock()
	defer t.linesMu.Unlock()
	if t.shown[test][line] {
		return true
	}
	if !t.renderer.Fail(test, line) {
		return false
	}
	t.markShown(test, line)
	return true
}

// failPackage fails the package with line (renderer.FailPackage), shown
// once.
func (t *Tracker) failPackage(line string) {
	t.linesMu.Lock()
	defer t.linesMu.Unlock()
	if !t.shown[""][line] {
		t.renderer.FailPackage(line)
		t.markShown("", line)
	}
}

// say puts line in test's output (renderer.Say), once per run of the
// test; false, as Say, when the test's end is written.
func (t *Tracker) say(test, line string) bool {
	t.linesMu.Lock()
	defer t.linesMu.Unlock()
	if t.shown[test][line] {
		return true
	}
	if !t.renderer.Say(test, line) {
		return false
	}
	t.markShown(test, line)
	return true
}

// note puts line among the package's lines (renderer.Note), once.
func (t *Tracker) note(line string) {
	t.linesMu.Lock()
	defer t.linesMu.Unlock()
	if !t.shown[""][line] {
		t.renderer.Note(line)
		t.markShown("", line)
	}
}

// markShown records that line was shown for test ("" the package);
// linesMu held.
func (t *Tracker) markShown(test, line string) {
	if t.shown == nil {
		t.shown = map[string]map[string]bool{}
	}
	if t.shown[test] == nil {
		t.shown[test] = map[string]bool{}
	}
	t.shown[test][line] = true
}

// show puts a would-be denial's line into the output of the test it is
// about (every candidate's), failing nothing; outside a test, or once
// the test's end is written, among the package's lines.
func (t *Tracker) show(w guard.Who, rec audit.Record, line string) {
	var tests []string
	switch {
	case rec.StartedBy != "":
		tests = []string{rec.StartedBy}
	case !w.Collection && !rec.Unowned:
		tests = recTests(rec)
	}
	shown := false
	for _, name := range tests {
		shown = t.say(name, line) || shown
	}
	if !shown {
		t.note(line)
	}
}

// recTests are the tests a record is about: its test, or its
// candidates. They are the transaction's Who's, unless the caller's
// stack pinned the call to fewer of its candidates (guard's pinned).
func recTests(rec audit.Record) []string {
	if len(rec.Candidates) > 0 {
		return rec.Candidates
	}
	return []string{rec.Test}
}

func (t *Tracker) markUsed(rec audit.Record) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, name := range recTests(rec) {
		for ; name != ""; name = parentName(name) {
			t.used[name] = true
		}
	}
}

// Finish reads what is left, reports stale markers (marked tests that made
// no network attempt), and flushes the output. It returns the audit
// records of its findings about tests: stale markers and bad markers (a
// nettrap attribute with an unknown value), in the order found, without
// the fields of an attempt (pid, syscall, …), which do not apply. Call it
// once the binary has exited; what a leftover subprocess writes to the
// pipe after that is not read.
func (t *Tracker) Finish() ([]audit.Record, error) {
	err := t.drain()
	t.readMu.Lock()
	t.eof = true
	t.parser.Close()
	if t.wake >= 0 {
		// End Run's poll: it sees eof and returns.
		unix.Write(t.wake, []byte{1, 0, 0, 0, 0, 0, 0, 0})
	}
	t.readMu.Unlock()
	var recs []audit.Record
	t.mu.Lock()
	for _, b := range t.badAttr {
		recs = append(recs, audit.Record{Package: t.Package, Test: b.test, Decision: audit.BadMarker, MarkerValue: b.value,
			Reason: b.reason()})
	}
	t.mu.Unlock()
	for _, name := range t.stale() {
		t.renderer.Note(fmt.Sprintf("nettrap: stale marker: %s may use the network but made no network attempt; remove the marker if the test is mocked", name))
		recs = append(recs, audit.Record{Package: t.Package, Test: name, Marked: true,
			Decision: audit.StaleMarker, Reason: audit.ReasonStaleMarker})
	}
	return recs, errors.Join(err, t.renderer.Close())
}

// Refused reports whether an attempt of the binary was denied, or would
// be under enforce (--mode=audit): its run must not be cached as a pass.
func (t *Tracker) Refused() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.refused
}

// Failed reports whether nettrap failed a test or the package.
func (t *Tracker) Failed() bool { return t.renderer.Failed() }

// stale lists the tests that carry the marker themselves (not only through
// a parent) and made no attempt, nor did any of their subtests.
func (t *Tracker) stale() []string {
	if t.Sealed {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	seen := map[string]bool{}
	for _, name := range t.tests {
		if seen[name] || t.used[name] || t.renderer.Dropped(name) {
			continue // a test -failfast stopped as it started had no time to try
		}
		seen[name] = true
		// A test named by an --allow-test rule is no stale marker: a rule
		// that names no test with an attempt is reported as an unused
		// rule, by the nettrap that sees the whole run.
		if v, ok := t.parser.Attr(name, MarkerKey); (ok && v == MarkerValue) || t.logged[name] {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// parentName is the name of a subtest's parent, "" for a top-level test.
func parentName(name string) string {
	for i := len(name) - 1; i >= 0; i-- {
		if name[i] == '/' {
			return name[:i]
		}
	}
	return ""
}
