package guard

import (
	"bytes"
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/audit"
	"github.com/nettrap/nettrap/bpf"
	"github.com/nettrap/nettrap/classify"
	"github.com/nettrap/nettrap/decision"
	"github.com/nettrap/nettrap/policy"
)

func inet(s string) classify.Dest {
	ap := netip.MustParseAddrPort(s)
	if ap.Addr().Is4() {
		return classify.Dest{Family: unix.AF_INET, Addr: ap}
	}
	return classify.Dest{Family: unix.AF_INET6, Addr: ap}
}

// callerPID is the process every test call comes from.
const callerPID = 4242

// call builds a Call as the supervisor would decode it, made by pid
// callerPID (curl) on a socket of unknown type. No kernel, /proc or
// descriptor is involved: the guard decides on the fields and asks the
// fixed task.
func call(kind bpf.Kind, dests ...classify.Dest) *decision.Call {
	return &decision.Call{TID: callerPID, Syscall: bpf.Call{Name: kind.String(), Kind: kind, ABI: "x86_64"},
		Dests: dests, Task: task("")}
}

// task is the fixed caller of the tests, on a socket of type sock.
func task(sock string, missing ...string) decision.FixedTask {
	return decision.FixedTask{Process: decision.Caller{PID: callerPID, TID: callerPID,
		Exe: "/usr/bin/curl", Argv0: "curl", Argv: []string{"curl"}}, Sock: sock, Missing: missing}
}

type fixture struct {
	g    *Guard
	msgs *bytes.Buffer
	log  string
}

func newFixture(t *testing.T, p policy.Policy) *fixture {
	t.Helper()
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	w, err := audit.Open(log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	f := &fixture{msgs: &bytes.Buffer{}, log: log}
	f.g = &Guard{Policy: &p, Resolvers: &classify.Resolvers{}, Audit: w, Messages: f.msgs, RunID: "run1"}
	return f
}

func (f *fixture) records(t *testing.T) []audit.Record {
	t.Helper()
	b, err := os.ReadFile(f.log)
	if err != nil {
		t.Fatal(err)
	}
	var recs []audit.Record
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if line == "" {
			continue
		}
		var r audit.Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("bad record %q: %v", line, err)
		}
		recs = append(recs, r)
	}
	return recs
}

// askedTask counts what a decider asks of the task: every question costs
// the supervisor /proc reads or a borrowed descriptor.
type askedTask struct {
	decision.FixedTask
	asked int
}

func (t *askedTask) Caller() decision.Caller  { t.asked++; return t.FixedTask.Caller() }
func (t *askedTask) SockType() string         { t.asked++; return t.FixedTask.SockType() }
func (t *askedTask) PathExists(p string) bool { t.asked++; return t.FixedTask.PathExists(p) }
func (t *askedTask) TreeNetns() bool          { t.asked++; return t.FixedTask.TreeNetns() }

func TestPlainAllowedClassesAreCountedNotRecorded(t *testing.T) {
	f := newFixture(t, policy.Policy{})
	for _, d := range []classify.Dest{inet("127.0.0.1:80"), inet("[::1]:80"), {Family: unix.AF_UNIX, Path: "/tmp/x.sock"}} {
		c := call(bpf.Connect, d)
		task := &askedTask{FixedTask: task("tcp")}
		c.Task = task
		if a := f.g.Decide(c); !a.Allowed() {
			t.Errorf("%v denied", d)
		}
		if task.asked != 0 {
			t.Errorf("%v: the task was asked %d questions on the fast path", d, task.asked)
		}
	}

	if recs := f.records(t); len(recs) != 0 || f.msgs.Len() != 0 {
		t.Errorf("plain allowed calls left records %v and messages %q", recs, f.msgs)
	}
	if c := f.g.Counts(); c.AllowedByClass["loopback"] != 2 || c.AllowedByClass["unix"] != 1 {
		t.Errorf("counts %+v", c)
	}
}

// A denial asks the task who called: the record and the line name it.
func TestDenialAsksTheTask(t *testing.T) {
	f := newFixture(t, policy.Policy{})
	denied := call(bpf.Connect, inet("203.0.113.7:443"))
	asked := &askedTask{FixedTask: task("tcp")}
	denied.Task = asked
	if a := f.g.Decide(denied); a.Allowed() || asked.asked == 0 {
		t.Errorf("denied connect: %+v, task asked %d times; want a denial that names its caller", a, asked.asked)
	}
}

func TestDeniedIsRecordedAndReported(t *testing.T) {
	f := newFixture(t, policy.Policy{})
	c := call(bpf.Connect, inet("203.0.113.7:443"))
	c.Task = task("tcp")
	a := f.g.Decide(c)
	if a.Allowed() || a.Errno() != unix.EPERM {
		t.Fatalf("answer %+v, want EPERM", a)
	}
	recs := f.records(t)
	if len(recs) != 1 {
		t.Fatalf("%d records, want 1", len(recs))
	}
	r := recs[0]
	if r.Schema != audit.SchemaVersion || r.RunID != "run1" || r.Dest != "203.0.113.7:443" || r.Class != "external" ||
		r.Decision != "denied" || r.Syscall != "connect" || r.Family != "inet" || r.PID != callerPID || r.Argv0 != "curl" || r.SockType != "tcp" || r.Errno != "EPERM" {
		t.Errorf("record %+v", r)
	}
	want := "nettrap: Outbound network blocked: connect"
	if !strings.Contains(f.msgs.String(), want) || !strings.Contains(f.msgs.String(), "connect tcp 203.0.113.7:443 (external) by pid 4242 curl") {
		t.Errorf("message %q lacks %q", f.msgs, want)
	}
}

func TestAuditModeAllowsAndRecordsWouldDeny(t *testing.T) {
	f := newFixture(t, policy.Policy{Mode: policy.Audit})
	if a := f.g.Decide(call(bpf.SendTo, inet("10.0.0.1:53"))); !a.Allowed() {
		t.Fatalf("audit mode denied: %+v", a)
	}
	recs := f.records(t)
	if len(recs) != 1 || recs[0].Decision != "would-deny" || recs[0].Class != "private" {
		t.Errorf("records %+v", recs)
	}
	if !strings.Contains(f.msgs.String(), "audit: would block") {
		t.Errorf("message %q", f.msgs)
	}
}

// A vector with one denied message is denied whole; the allowed message
// is counted, the denied one recorded.
func TestSendmmsgOneDeniedDeniesAll(t *testing.T) {
	f := newFixture(t, policy.Policy{})
	a := f.g.Decide(call(bpf.SendMMsg, inet("127.0.0.1:53"), inet("198.51.100.1:53")))
	if a.Allowed() {
		t.Fatal("sendmmsg with an external message allowed")
	}
	if recs := f.records(t); len(recs) != 1 || recs[0].Dest != "198.51.100.1:53" {
		t.Errorf("records %+v", recs)
	}
}

func TestUnreadableArgumentsKeepTheirErrno(t *testing.T) {
	f := newFixture(t, policy.Policy{Mode: policy.Audit})
	c := call(bpf.Connect)
	c.Err = unix.EFAULT
	if a := f.g.Decide(c); a.Allowed() || a.Errno() != unix.EFAULT {
		t.Fatalf("answer %+v, want EFAULT even in audit mode", a)
	}
}

func TestRawSocketAndForeignABI(t *testing.T) {
	f := newFixture(t, policy.Policy{})
	sock := call(bpf.Socket)
	sock.Socket = decision.SocketArgs{Domain: unix.AF_PACKET, Type: unix.SOCK_RAW}
	if a := f.g.Decide(sock); a.Allowed() {
		t.Error("packet socket allowed")
	}
	foreign := call(bpf.Connect)
	foreign.Syscall.Foreign, foreign.Syscall.ABI = true, "i386"
	if a := f.g.Decide(foreign); a.Allowed() {
		t.Error("i386 connect allowed")
	}
	recs := f.records(t)
	if len(recs) != 2 || recs[0].Family != "packet" || recs[1].ABI != "i386" {
		t.Errorf("records %+v", recs)
	}
}

// TestTreeNetns: in a network namespace the tree made, connects and sends
// to any address and packet sockets are allowed, in both modes, and
// audited as own-netns; loopback stays on the fast path, unasked.
func TestTreeNetns(t *testing.T) {
	for _, sealed := range []bool{false, true} {
		f := newFixture(t, policy.Policy{Sealed: sealed})
		tree := task("tcp")
		tree.Tree = true
		for _, d := range []classify.Dest{inet("192.0.2.1:80"), inet("10.0.0.1:53"), inet("[2001:db8::1]:443")} {
			c := call(bpf.Connect, d)
			c.Task = tree
			if a := f.g.Decide(c); !a.Allowed() {
				t.Errorf("sealed=%v: %v in the tree's namespace denied", sealed, d)
			}
		}
		sock := call(bpf.Socket)
		sock.Socket = decision.SocketArgs{Domain: unix.AF_PACKET, Type: unix.SOCK_RAW}
		sock.Task = tree
		if a := f.g.Decide(sock); !a.Allowed() {
			t.Errorf("sealed=%v: packet socket in the tree's namespace denied", sealed)
		}
		loop := call(bpf.Connect, inet("127.0.0.1:80"))
		asked := &askedTask{FixedTask: tree}
		loop.Task = asked
		if a := f.g.Decide(loop); !a.Allowed() || asked.asked != 0 {
			t.Errorf("sealed=%v: loopback %+v, asked %d", sealed, a, asked.asked)
		}
		recs := f.records(t)
		if len(recs) != 4 {
			t.Fatalf("sealed=%v: records %+v, want 4", sealed, recs)
		}
		for _, r := range recs {
			if r.Class != "own-netns" || r.Decision != audit.Allowed || r.Reason != policy.ReasonOwnNetns {
				t.Errorf("sealed=%v: record %+v, want allowed own-netns", sealed, r)
			}
		}
		// The same outside the tree's namespaces: denied.
		out := call(bpf.Connect, inet("192.0.2.1:80"))
		out.Task = task("tcp")
		if a := f.g.Decide(out); a.Allowed() {
			t.Errorf("sealed=%v: 192.0.2.1 outside the tree's namespaces allowed", sealed)
		}
	}
}

// A resolver socket that does not exist cannot be reached: the call goes to
// the kernel (which says ENOENT) and fails nothing.
func TestMissingResolverSocketIsNotDNS(t *testing.T) {
	f := newFixture(t, policy.Policy{})
	f.g.Resolvers = &classify.Resolvers{UnixSockets: []string{"/nonexistent/nscd/socket"}}
	d := classify.Dest{Family: unix.AF_UNIX, Path: "/nonexistent/nscd/socket"}
	missing := call(bpf.Connect, d)
	missing.Task = task("unix-stream", d.Path)
	if a := f.g.Decide(missing); !a.Allowed() {
		t.Error("connect to a missing resolver socket denied")
	}
	exists := call(bpf.Connect, d)
	exists.Task = task("unix-stream")
	if a := f.g.Decide(exists); a.Allowed() {
		t.Error("connect to an existing resolver socket allowed")
	}
}

type fakeAttribution struct {
	mu      sync.Mutex
	who     Who
	reports []string
	held    int
}

func (f *fakeAttribution) Begin(*decision.Call) Transaction {
	f.mu.Lock()
	f.held++
	f.mu.Unlock()
	return &fakeTransaction{f: f, who: f.who}
}

type fakeTransaction struct {
	f     *fakeAttribution
	who   Who
	ended bool
}

func (a *fakeTransaction) Who() Who { return a.who }

func (a *fakeTransaction) Report(rec audit.Record, line string) {
	a.f.mu.Lock()
	defer a.f.mu.Unlock()
	a.f.reports = append(a.f.reports, string(rec.Decision)+"|"+rec.Test+"|"+line)
}

func (a *fakeTransaction) End() {
	a.f.mu.Lock()
	defer a.f.mu.Unlock()
	if a.ended {
		panic("End called twice")
	}
	a.ended = true
	a.f.held--
}

func TestAttributionGetsTheDenialNotStderr(t *testing.T) {
	f := newFixture(t, policy.Policy{})
	attr := &fakeAttribution{who: Who{Package: "example.com/p", Test: "TestFetch"}}
	f.g.Attribution = attr
	f.g.Decide(call(bpf.Connect, inet("203.0.113.7:80")))
	if len(attr.reports) != 1 || !strings.HasPrefix(attr.reports[0], "denied|TestFetch|nettrap: Outbound network blocked: connect") ||
		!strings.HasSuffix(attr.reports[0], "203.0.113.7:80 (external) during TestFetch") {
		t.Errorf("reports %q", attr.reports)
	}
	if f.msgs.Len() != 0 {
		t.Errorf("denial also printed to messages: %q", f.msgs)
	}
	if attr.held != 0 {
		t.Errorf("hold not released")
	}
	if recs := f.records(t); len(recs) != 1 || recs[0].Package != "example.com/p" || recs[0].Test != "TestFetch" {
		t.Errorf("records %+v", recs)
	}
	attr.who = Who{Test: "collection", Context: policy.Context{Collection: true, Marked: true}}
	if a := f.g.Decide(call(bpf.Connect, inet("203.0.113.7:80"))); a.Allowed() {
		t.Error("collection-time attempt allowed")
	}
	attr.who = Who{Test: "TestLive", Context: policy.Context{Marked: true}}
	if a := f.g.Decide(call(bpf.Connect, inet("203.0.113.7:80"))); !a.Allowed() {
		t.Error("marked test denied")
	}
	if last := attr.reports[len(attr.reports)-1]; last != "allowed|TestLive|" {
		t.Errorf("marked allow reported as %q", last)
	}
}

// A full disk loses no record: it goes to the messages, and the error is kept.
func TestAuditFullDisk(t *testing.T) {
	w, err := audit.Open("/dev/full")
	if err != nil {
		t.Skipf("no /dev/full: %v", err)
	}
	defer w.Close()
	var msgs bytes.Buffer
	g := &Guard{Policy: &policy.Policy{}, Audit: w, Messages: &msgs}
	g.Decide(call(bpf.Connect, inet("203.0.113.7:80")))
	if len(g.AuditErrors()) != 1 {
		t.Fatalf("audit errors %v", g.AuditErrors())
	}
	if !strings.Contains(msgs.String(), `"dest":"203.0.113.7:80"`) || !strings.Contains(msgs.String(), "no space left") {
		t.Errorf("the lost record is not in the messages: %q", msgs.String())
	}
}

// The ambiguity hint names the flag as the user types it: -parallel=1 to
// go test (nettrap -- go test, go test -exec nettrap), -test.parallel=1
// to a test binary run by hand.
func TestAmbiguousLineSaysTheUsersFlag(t *testing.T) {
	for _, tc := range []struct {
		goTest    bool
		want, not string
	}{
		{true, "rerun with -parallel=1 to pin it", "-test.parallel"},
		{false, "rerun with -test.parallel=1 to pin it", " -parallel=1"},
	} {
		f := newFixture(t, policy.Policy{})
		f.g.GoTest = tc.goTest
		attr := &fakeAttribution{who: Who{Package: "example.com/p", Candidates: []string{"TestA", "TestB"}}}
		f.g.Attribution = attr
		f.g.Decide(call(bpf.Connect, inet("203.0.113.7:80")))
		if len(attr.reports) != 1 {
			t.Fatalf("GoTest %v: reports %q, want one", tc.goTest, attr.reports)
		}
		if r := attr.reports[0]; !strings.Contains(r, tc.want) || strings.Contains(r, tc.not) {
			t.Errorf("GoTest %v: line %q, want %q and no %q", tc.goTest, r, tc.want, tc.not)
		}
	}
}

// exitingTask is a caller that exits while its call waits for the
// attribution (a leftover goroutine's connect as the test binary ends):
// from then on /proc and its descriptors tell nothing.
type exitingTask struct {
	decision.FixedTask
	exited *atomic.Bool
}

func (t exitingTask) Caller() decision.Caller {
	if t.exited.Load() {
		return decision.Caller{PID: t.Process.PID, TID: t.Process.TID, Gone: true}
	}
	return t.Process
}

func (t exitingTask) SockType() string {
	if t.exited.Load() {
		return ""
	}
	return t.Sock
}

func (t exitingTask) Pending() bool { return !t.exited.Load() }

// exitOnBegin is an attribution during whose wait the caller exits.
type exitOnBegin struct {
	fakeAttribution
	exited *atomic.Bool
}

func (a *exitOnBegin) Begin(c *decision.Call) Transaction {
	a.exited.Store(true)
	return a.fakeAttribution.Begin(c)
}

// TestSockTypeReadBeforeAttribution: the socket type (and the caller) are
// read while the call surely waits, before the attribution may wait for
// the test's output; a caller that exits meanwhile still gets "connect
// udp" in its line and record, as every other row of the summary.
func TestSockTypeReadBeforeAttribution(t *testing.T) {
	f := newFixture(t, policy.Policy{})
	exited := &atomic.Bool{}
	attr := &exitOnBegin{fakeAttribution: fakeAttribution{who: Who{Package: "example.com/p", Test: audit.Collection}}, exited: exited}
	f.g.Attribution = attr
	c := call(bpf.Connect, inet("[2001:db8::1]:53"))
	c.Task = exitingTask{FixedTask: task("udp"), exited: exited}
	f.g.Decide(c)
	if len(attr.reports) != 1 || !strings.Contains(attr.reports[0], "Outbound network blocked: connect udp [2001:db8::1]:53 (external) at collection time") {
		t.Errorf("reports %q, want the line with the socket type", attr.reports)
	}
	recs := f.records(t)
	if len(recs) != 1 || recs[0].SockType != "udp" || recs[0].Exe != "/usr/bin/curl" {
		t.Errorf("records %+v, want one with sock_type udp and the caller's exe", recs)
	}
}

// TestOnlyPlainAllowsAreUnkept: the engine recycles a call only when the
// guard keeps nothing of it: a plain allowed call, by the fast path (one
// destination) or the general one (several); never a call it records,
// redirects or checks the peers of.
func TestOnlyPlainAllowsAreUnkept(t *testing.T) {
	f := newFixture(t, policy.Policy{})
	for _, c := range []*decision.Call{
		call(bpf.Connect, inet("127.0.0.1:80")),
		call(bpf.SendMMsg, inet("127.0.0.1:80"), inet("[::1]:53")),
		call(bpf.SendTo, classify.Dest{Family: unix.AF_UNIX, Path: "/tmp/x.sock"}),
	} {
		if a := f.g.Decide(c); !a.Allowed() || a.KeepsCall() {
			t.Errorf("%s %v: allowed %t, kept %t; want an unkept allow", c.Syscall.Name, c.Dests, a.Allowed(), a.KeepsCall())
		}
	}
	if a := f.g.Decide(call(bpf.Connect, inet("203.0.113.7:443"))); a.Allowed() || !a.KeepsCall() {
		t.Errorf("a denial: allowed %t, kept %t", a.Allowed(), a.KeepsCall())
	}
	audited := newFixture(t, policy.Policy{Mode: policy.Audit})
	if a := audited.g.Decide(call(bpf.Connect, inet("203.0.113.7:443"))); !a.Allowed() || !a.KeepsCall() {
		t.Errorf("an audited allow: allowed %t, kept %t; want a kept allow", a.Allowed(), a.KeepsCall())
	}
	sealed := newFixture(t, policy.Policy{Sealed: true})
	if a := sealed.g.Decide(call(bpf.Connect, inet("127.0.0.1:80"))); !a.Allowed() || a.Peer() == nil || !a.KeepsCall() {
		t.Errorf("a sealed loopback connect: allowed %t, peer %v, kept %t; want a kept peer check", a.Allowed(), a.Peer(), a.KeepsCall())
	}
}

// TestSoleDestinationIsAttempts: the one-destination path's class is
// that of the general path, for every kind of call with one destination,
// and it is taken exactly when the general path's attempts are that one
// destination.
func TestSoleDestinationIsAttempts(t *testing.T) {
	f := newFixture(t, policy.Policy{})
	dests := []classify.Dest{inet("127.0.0.1:80"), inet("[::1]:80"), inet("10.0.0.1:80"), inet("0.0.0.0:80"),
		inet("203.0.113.7:443"), {Family: unix.AF_UNIX, Path: "/tmp/x.sock"}, {Family: unix.AF_NETLINK}, {NoDest: true}}
	for _, kind := range []bpf.Kind{bpf.Connect, bpf.SendTo, bpf.SendMsg, bpf.SendMMsg, bpf.Socket, bpf.Ioctl, bpf.BPF, bpf.PidfdGetfd} {
		for _, d := range dests {
			c := call(kind, d)
			cls, ok := f.g.soleDestination(c)
			atts := f.g.attempts(c)
			if want := len(atts) == 1 && atts[0].Kind == policy.Destination; ok != want {
				t.Errorf("%s %v: soleDestination %t, attempts %+v", kind, d, ok, atts)
				continue
			}
			if ok && atts[0].Class != cls {
				t.Errorf("%s %v: soleDestination class %v, attempts %+v", kind, d, cls, atts[0])
			}
		}
	}
	c := call(bpf.SendMsg, inet("127.0.0.1:80"))
	c.SourceRoute = true
	if _, ok := f.g.soleDestination(c); ok {
		t.Error("a source-routed send took the one-destination path")
	}
}

// One cause, one line, on the messages too: a process that makes the
// same denied call again (a retry loop, a lookup's queries) gets its
// line once in generic mode, and so does a would-be denial under
// --mode=audit; every call keeps its record. Another destination is
// another line.
func TestMessagesShownOnce(t *testing.T) {
	for _, mode := range []policy.Mode{policy.Enforce, policy.Audit} {
		f := newFixture(t, policy.Policy{Mode: mode})
		for range 3 {
			f.g.Decide(call(bpf.Connect, inet("203.0.113.7:80")))
		}
		f.g.Decide(call(bpf.Connect, inet("203.0.113.8:80")))
		lines := strings.Split(strings.TrimSpace(f.msgs.String()), "\n")
		if len(lines) != 2 || !strings.Contains(lines[0], "203.0.113.7:80") || !strings.Contains(lines[1], "203.0.113.8:80") {
			t.Errorf("mode %v: messages %q, want one line per destination", mode, lines)
		}
		if recs := f.records(t); len(recs) != 4 {
			t.Errorf("mode %v: %d records, want one per call (4)", mode, len(recs))
		}
	}
}

// TestKeepRecords: with Keep the guard keeps what it writes to the log
// (denials, unreadable calls, records of the caller's own), in order,
// also with no log at all; without Keep it keeps nothing.
func TestKeepRecords(t *testing.T) {
	f := newFixture(t, policy.Policy{})
	f.g.Keep = true
	f.g.Decide(call(bpf.Connect, inet("203.0.113.7:443")))
	f.g.Decide(call(bpf.Connect, inet("127.0.0.1:80"))) // allowed by its class: counted, not recorded
	bad := call(bpf.Connect)
	bad.Err = unix.EFAULT
	f.g.Decide(bad)
	f.g.WriteRecord(audit.Record{Package: "example.com/p", Test: "TestStale", Decision: audit.StaleMarker})
	kept, logged := f.g.Records(), f.records(t)
	if len(kept) != 3 || kept[0].Dest != "203.0.113.7:443" || kept[1].Errno != "EFAULT" || kept[2].Decision != audit.StaleMarker {
		t.Errorf("kept %+v", kept)
	}
	for i := range min(len(kept), len(logged)) {
		if kept[i].Dest != logged[i].Dest || kept[i].Decision != logged[i].Decision || kept[i].RunID != logged[i].RunID {
			t.Errorf("kept record %d %+v, logged %+v", i, kept[i], logged[i])
		}
	}

	g := &Guard{Policy: &policy.Policy{}, Resolvers: &classify.Resolvers{}, Messages: &bytes.Buffer{}, Keep: true}
	g.Decide(call(bpf.Connect, inet("203.0.113.7:443")))
	if recs := g.Records(); len(recs) != 1 {
		t.Errorf("no log: kept %+v, want the denial", recs)
	}
	f = newFixture(t, policy.Policy{})
	f.g.Decide(call(bpf.Connect, inet("203.0.113.7:443")))
	if recs := f.g.Records(); len(recs) != 0 {
		t.Errorf("without Keep: kept %+v", recs)
	}
}
