package guard

import (
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/audit"
	"github.com/nettrap/nettrap/bpf"
	"github.com/nettrap/nettrap/classify"
	"github.com/nettrap/nettrap/decision"
	"github.com/nettrap/nettrap/policy"
)

// Guard is the decision.Decider of nettrap: it classifies what a call
// aims at, asks the policy, and keeps the audit trail and the counts.
type Guard struct {
	Policy    *policy.Policy
	Resolvers *classify.Resolvers
	Audit     *audit.Writer // nil: no audit log
	Messages  io.Writer     // the "nettrap: …" lines (stderr)
	RunID     string
	// Attribution tells who made a call; nil means Generic on Messages.
	Attribution Attribution
	// Sink, when set, takes denied lookups (dns.go); nil: they fail.
	Sink DNSSink
	// GoTest says the test binaries were started by go test (nettrap --
	// go test, go test -exec nettrap, a go test inside a command run):
	// advice then names go test's flags, not the binary's.
	GoTest bool
	// Keep: the guard keeps every record it writes (Records), for a run
	// that reports them itself rather than read a log back, which it may
	// not have (a test binary's nettrap under go test -exec, reporting
	// to GitHub Actions).
	Keep bool

	// plain counts the calls allowed by their class alone, by class
	// (countPlain): atomics, since every such call counts one.
	plain [classify.OwnNetns + 1]atomic.Int64

	// shown are the message lines shown on Messages (by Generic, and
	// would-be denials): each once.
	shown Lines

	mu        sync.Mutex
	counts    Counts
	auditErrs []error
	kept      []audit.Record     // with Keep
	watches   map[*dnsWatch]bool // redirected sockets (dns.go)
}

// Counts are what the guard saw, by outcome.
type Counts struct {
	AllowedByClass map[string]int
	Audited        int // allowed by a rule or a marker
	Denied         int
	WouldDeny      int
}

// decidedAttempt is one destination (or non-destination) of a call, as
// the policy sees it (policy.Attempt), with the policy's decision.
type decidedAttempt struct {
	policy.Attempt
	decision policy.Decision
	// redirected: the call went to the DNS sinkhole instead of failing
	// (dns.go); lookup is the query the sinkhole read, if any.
	redirected bool
	lookup     string
}

// Decide implements decision.Decider.
func (g *Guard) Decide(c *decision.Call) decision.Answer {
	if c.Err != 0 {
		return g.unreadable(c)
	}
	if isNetlinkSocket(c) {
		return g.netlinkSocket(c)
	}
	var atts []decidedAttempt
	if cls, ok := g.soleDestination(c); ok {
		// The most common call (a loopback connect or send) has one
		// attempt, its destination, classified once here. A plain one
		// needs its attempt only for a peer check (--sealed).
		if cls.AllowedByDefault() && !g.Policy.Sealed {
			g.plain[cls].Add(1)
			return g.allow(c, nil)
		}
		atts = []decidedAttempt{{Attempt: policy.Attempt{Kind: policy.Destination, Dest: c.Dests[0], Class: cls}}}
	} else {
		atts = g.attempts(c)
	}
	if allPlain(atts) {
		g.countPlain(atts)
		return g.allow(c, atts)
	}
	// Read the caller and its socket now, while the call surely waits:
	// the attribution may wait for the test's output, and a caller that
	// exits meanwhile (a leftover goroutine's call as the binary ends)
	// tells nothing more.
	o := originOf(c)
	tx := g.attribution().Begin(c)
	handedOver := false
	defer func() {
		if !handedOver {
			tx.End()
		}
	}()
	who := tx.Who()
	var denied *policy.Decision
	audited := false
	for i := range atts {
		a := &atts[i]
		a.Context = who.Context
		a.decision = g.Policy.Decide(a.Attempt)
		if a.decision.Verdict == audit.Denied && denied == nil {
			denied = &a.decision
		}
		audited = audited || a.decision.Audit
	}
	if audited {
		// Once per call, while it waits; never for a call that
		// leaves no record.
		o.stack = readOrigin(c, who)
	}
	if rd := g.dnsRedirect(c, o, tx, atts); rd != nil {
		// Recorded, and ended, by the redirect's Done.
		handedOver = true
		if denied == nil {
			return decision.Allow()
		}
		return decision.DenyRedirect(denied.Errno, rd)
	}
	g.record(c, o, tx, atts)
	if denied != nil {
		return decision.Deny(denied.Errno)
	}
	return decision.AllowPeers(g.peerCheck(c, atts))
}

// allow is the answer to a call whose every attempt is allowed by its
// class: on a thread without capabilities for a netlink send that names
// the kernel (netlinkCapless), to the confined tree's peers only under
// --sealed (peerCheck).
func (g *Guard) allow(c *decision.Call, atts []decidedAttempt) decision.Answer {
	if g.netlinkCapless(c) {
		return decision.AllowCapless()
	}
	// Nothing refers to c from here on, except a peer check's (which
	// Unkept leaves kept).
	return decision.AllowPeers(g.peerCheck(c, atts)).Unkept()
}

// origin is what a record says of the caller and the socket, read once
// per call.
type origin struct {
	caller decision.Caller
	sock   string
	stack  stackRead // what the caller's stack shows (blame.go); zero: not read
}

func originOf(c *decision.Call) origin {
	return origin{caller: c.Task.Caller(), sock: c.Task.SockType()}
}

// Quick implements decision.QuickDecider: the calls decided without
// attribution (allowed by their class alone, netlink sockets, unreadable
// ones) never wait for an inner nettrap.
func (g *Guard) Quick(c *decision.Call) bool {
	if c.Err != 0 || isNetlinkSocket(c) {
		return true
	}
	// Under --sealed a unix or loopback call may need attribution after
	// all, when its peer is outside the tree (peer.go).
	atts := g.attempts(c)
	return allPlain(atts) && (!g.Policy.Sealed || !needsPeer(atts, g.Policy.AllowUnspecified))
}

// unreadable answers a call whose arguments could not be read or are
// malformed: it fails with the kernel's errno, in every mode, and is
// recorded (a bad pointer in a network call is worth a look).
func (g *Guard) unreadable(c *decision.Call) decision.Answer {
	rec := g.newRecord(c, Who{}, c.Task.Caller(), "", decidedAttempt{decision: policy.Decision{
		Verdict: audit.Denied, Errno: c.Err,
		Reason: "arguments unreadable or malformed (" + unix.ErrnoName(c.Err) + "): the kernel would fail the call too",
	}}, time.Now().UTC())
	g.keep(rec)
	if g.Audit != nil {
		if err := g.Audit.Write(rec); err != nil {
			g.auditFailed(err, rec)
		}
	}
	return decision.Deny(c.Err)
}

// attempts turns a call into the policy's attempts, classifying every
// destination it names.
func (g *Guard) attempts(c *decision.Call) []decidedAttempt {
	if c.Syscall.Foreign {
		return []decidedAttempt{{Attempt: policy.Attempt{Kind: policy.ForeignABI}}}
	}
	switch c.Syscall.Kind {
	case bpf.Socket:
		a := socketAttempt(c.Socket)
		if a.Kind == policy.RawSocket && c.Task.TreeNetns() {
			a.Class = classify.OwnNetns // its frames stay in the tree's namespaces
		}
		return []decidedAttempt{{Attempt: a}}
	case bpf.IOUringSetup:
		return []decidedAttempt{{Attempt: policy.Attempt{Kind: policy.IOURing}}}
	case bpf.Ptrace, bpf.ProcessVMWritev, bpf.PidfdGetfd:
		if c.OwnDescendant {
			return nil
		}
		return []decidedAttempt{{Attempt: policy.Attempt{Kind: policy.CrossProcess}}}
	case bpf.Ioctl:
		return []decidedAttempt{{Attempt: ioctlAttempt(c)}}
	case bpf.BPF:
		return []decidedAttempt{{Attempt: attachAttempt(c)}}
	}
	atts := make([]decidedAttempt, 0, len(c.Dests)+1)
	if c.SourceRoute {
		atts = append(atts, decidedAttempt{Attempt: policy.Attempt{Kind: policy.SourceRoute}})
	}
	if c.Pin != "" {
		detail := c.Pin
		if c.Option != "" {
			detail = c.Option + " " + c.Pin
		}
		atts = append(atts, decidedAttempt{Attempt: policy.Attempt{Kind: policy.InterfacePin, Detail: detail}})
	}
	if c.Group.IsValid() {
		atts = append(atts, decidedAttempt{Attempt: joinAttempt(c)})
	}
	if c.Netfilter {
		atts = append(atts, decidedAttempt{Attempt: policy.Attempt{Kind: policy.NetnsChange, Detail: "setsockopt " + c.Option,
			Harmless: c.OtherNetns}})
	}
	if c.NetlinkChange != "" {
		atts = append(atts, decidedAttempt{Attempt: policy.Attempt{Kind: policy.NetnsChange, Detail: "netlink " + c.NetlinkChange}})
	}
	for _, d := range c.Dests {
		atts = append(atts, decidedAttempt{Attempt: policy.Attempt{Kind: policy.Destination, Dest: d, Class: g.destClass(c, d)}})
	}
	return atts
}

// destClass is the class of destination d of call c.
func (g *Guard) destClass(c *decision.Call, d classify.Dest) classify.Class {
	cls := g.Resolvers.Classify(d)
	if cls == classify.DNS && d.Family == unix.AF_UNIX && !d.Abstract && !c.Task.PathExists(d.Path) {
		// No name service daemon listens there (nscd is rarely
		// installed): the kernel will answer ENOENT and nothing is
		// reached. glibc tries nscd for passwd and group lookups
		// too (os/user with cgo), which must not fail a test.
		cls = classify.Unix
	}
	if !cls.AllowedByDefault() && netnsBound(d.Family) && c.Task.TreeNetns() {
		cls = classify.OwnNetns
	}
	return cls
}

// soleDestination returns the class of a call whose attempts (see
// attempts) are its one destination and nothing else; false for every
// other call.
func (g *Guard) soleDestination(c *decision.Call) (classify.Class, bool) {
	if c.Syscall.Foreign || len(c.Dests) != 1 || c.SourceRoute || c.Pin != "" || c.Group.IsValid() || c.Netfilter || c.NetlinkChange != "" {
		return 0, false
	}
	switch c.Syscall.Kind {
	case bpf.Socket, bpf.IOUringSetup, bpf.Ptrace, bpf.ProcessVMWritev, bpf.PidfdGetfd, bpf.Ioctl, bpf.BPF:
		return 0, false // attempts of their own
	}
	return g.destClass(c, c.Dests[0]), true
}

// netnsBound tells whether a destination of family fam is reached through
// the socket's network namespace: inet, and packet sockets' interfaces.
func netnsBound(fam uint16) bool {
	return fam == unix.AF_INET || fam == unix.AF_INET6 || fam == unix.AF_PACKET
}

// socketAttempt tells why the filter sent a socket(2) up: a packet or raw
// inet socket, SCTP, or a family that is not allowed at all.
func socketAttempt(s decision.SocketArgs) policy.Attempt {
	switch s.Domain {
	case unix.AF_PACKET:
		return policy.Attempt{Kind: policy.RawSocket}
	case unix.AF_INET, unix.AF_INET6:
		if s.Protocol == unix.IPPROTO_SCTP {
			return policy.Attempt{Kind: policy.SCTPSocket}
		}
		return policy.Attempt{Kind: policy.RawSocket}
	}
	return policy.Attempt{Kind: policy.FamilySocket, Dest: classify.Dest{Family: uint16(s.Domain)}, Class: classify.OtherFamily}
}

// joinAttempt is a multicast (or anycast) join, with the group as its
// destination: the audit trail names the group and its class.
func joinAttempt(c *decision.Call) policy.Attempt {
	fam := uint16(unix.AF_INET6)
	if c.Group.Is4() {
		fam = unix.AF_INET
	}
	detail := c.Option
	if c.GroupSource.IsValid() {
		detail += " source " + c.GroupSource.String()
	}
	return policy.Attempt{Kind: policy.MulticastJoin, Detail: detail,
		Dest: classify.Dest{Family: fam, Addr: netip.AddrPortFrom(c.Group, 0)}, Class: classify.ClassifyAddr(c.Group)}
}

// isNetlinkSocket: a native socket(AF_NETLINK, …).
func isNetlinkSocket(c *decision.Call) bool {
	return c.Syscall.Kind == bpf.Socket && !c.Syscall.Foreign && c.Socket.Domain == unix.AF_NETLINK
}

// netlinkSocket lets a netlink socket be created. In the namespace
// nettrap started in it is made without capabilities (see
// supervisor/netlink.go), so that every change requested through it is
// refused by the kernel while reads work. In audit mode nothing is
// refused: the target makes its own socket, and since the change is a
// write of a netlink message, which nettrap does not see, it is not
// recorded either.
func (g *Guard) netlinkSocket(c *decision.Call) decision.Answer {
	g.countPlain([]decidedAttempt{{Attempt: policy.Attempt{Class: classify.Kernel}}})
	if g.Policy.Mode == policy.Audit || c.OtherNetns {
		return decision.Allow()
	}
	return decision.AllowCapless()
}

// netlinkCapless: an allowed netlink send that names the kernel, on a
// socket of the starting namespace, is made by the supervisor on its
// thread without capabilities, with the bytes that were read (see
// supervisor/netlink.go): no other thread can change them after the
// check, and the kernel refuses any change they ask for. Not in audit
// mode, which changes nothing.
func (g *Guard) netlinkCapless(c *decision.Call) bool {
	return c.NetlinkOurs && g.Policy.Mode != policy.Audit
}

// ioctlAttempt: a socket ioctl of bpf.NetnsIoctls acts on the socket's
// namespace; one the test made for itself is its own.
func ioctlAttempt(c *decision.Call) policy.Attempt {
	return policy.Attempt{Kind: policy.NetnsChange, Detail: "ioctl " + c.Request,
		Harmless: c.OtherNetns}
}

// attachAttempt: a bpf(2) attach, judged by its attach type.
func attachAttempt(c *decision.Call) policy.Attempt {
	name, scope := bpf.LookupAttachType(c.AttachType)
	harmless := scope == bpf.AttachAllowed || (scope == bpf.AttachStartingNetns && c.OtherNetns)
	return policy.Attempt{Kind: policy.BPFAttach, Detail: c.Request + " " + name, Harmless: harmless}
}

// allPlain: every attempt is of a class allowed by default, which needs no
// attribution, no record, nothing but a count: the fast path.
func allPlain(atts []decidedAttempt) bool {
	for _, a := range atts {
		if a.Kind != policy.Destination || !a.Class.AllowedByDefault() {
			return false
		}
	}
	return true
}

func (g *Guard) countPlain(atts []decidedAttempt) {
	for _, a := range atts {
		g.plain[a.Class].Add(1) // allowed by default: a class of its own
	}
}

// attribution is g.Attribution, or Generic on g.Messages, each line
// shown once.
func (g *Guard) attribution() Attribution {
	if g.Attribution != nil {
		return g.Attribution
	}
	return Generic{Messages: g.Messages, Once: &g.shown}
}

// parallelFlag is the flag that pins a test, in the words of whoever
// started the test binaries.
func (g *Guard) parallelFlag() string {
	if g.GoTest {
		return audit.ParallelGoTest
	}
	return audit.ParallelBinary
}

// record writes the audit records and the message lines of a call.
func (g *Guard) record(c *decision.Call, o origin, tx Transaction, atts []decidedAttempt) {
	who := pinWho(tx.Who(), o.stack.pin)
	caller, sock := o.caller, o.sock
	now := time.Now().UTC()
	for _, a := range atts {
		d := a.decision
		if !d.Audit {
			if a.Kind == policy.Destination {
				g.countPlain([]decidedAttempt{a})
			}
			continue
		}
		rec := g.newRecord(c, who, caller, sock, a, now)
		rec.Origin = o.stack.origin
		g.count(d)
		line := ""
		if d.Verdict != audit.Allowed {
			line = "nettrap: " + audit.Message(rec, who.Test == "", g.parallelFlag())
			if who.ShowsStack {
				line += audit.FramesText(o.stack.shown)
			}
		}
		tx.Report(rec, line)
		if line != "" && d.Verdict != audit.Denied && !who.ShowsAudit && g.shown.First(line) {
			// The attribution shows denials; a would-be denial
			// (--mode=audit) is a message of the run, unless the
			// attribution puts it in the test's output (-v, -json).
			fmt.Fprintln(g.Messages, line)
		}
		g.keep(rec)
		if g.Audit != nil {
			if err := g.Audit.Write(rec); err != nil {
				g.auditFailed(err, rec)
			}
		}
	}
}

// keep keeps rec when the guard keeps its records (Keep).
func (g *Guard) keep(rec audit.Record) {
	if !g.Keep {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.kept = append(g.kept, rec)
}

// Records returns the records written so far, when the guard keeps them
// (Keep).
func (g *Guard) Records() []audit.Record {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]audit.Record(nil), g.kept...)
}

func (g *Guard) newRecord(c *decision.Call, who Who, caller decision.Caller, sock string, a decidedAttempt, now time.Time) audit.Record {
	rec := audit.Record{
		Schema: audit.SchemaVersion, Time: now, RunID: g.RunID,
		Package: who.Package, Test: who.Test, Candidates: who.Candidates, Marked: who.Marked, AllowTest: who.AllowTest,
		PID: caller.PID, TID: c.TID, Exe: caller.Exe, Argv0: filepath.Base(caller.Argv0),
		Syscall: c.Syscall.Name, ABI: c.Syscall.ABI, SockType: sock,
		Decision: a.decision.Verdict, Reason: a.decision.Reason,
	}
	if c.Syscall.Kind == bpf.Socket && !c.Syscall.Foreign {
		rec.Family = classify.FamilyName(uint16(c.Socket.Domain))
	}
	switch a.Kind {
	case policy.Destination:
		rec.Family = a.Dest.FamilyName()
		rec.Dest = a.Dest.String()
		rec.Class = a.Class.String()
	case policy.MulticastJoin:
		rec.Family = a.Dest.FamilyName()
		rec.Dest = a.Dest.Addr.Addr().String()
		rec.Class = a.Class.String()
	case policy.FamilySocket:
		rec.Class = a.Class.String()
	case policy.RawSocket:
		if a.Class == classify.OwnNetns {
			rec.Class = a.Class.String()
		}
	case policy.InterfacePin:
		rec.Class = audit.ClassInterfacePin
	case policy.NetnsChange:
		rec.Class = audit.ClassNetnsChange
	case policy.BPFAttach:
		rec.Class = audit.ClassBPFAttach
	}
	if a.decision.Errno != 0 && !a.redirected {
		rec.Errno = unix.ErrnoName(a.decision.Errno)
	}
	if a.lookup != "" {
		rec.Lookup = a.lookup
		rec.Reason = audit.ReasonDNSRefused
	}
	return rec
}

func (g *Guard) count(d policy.Decision) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch d.Verdict {
	case audit.Allowed:
		g.counts.Audited++
	case audit.Denied:
		g.counts.Denied++
	case audit.WouldDeny:
		g.counts.WouldDeny++
	}
}

// auditFailed keeps a record that could not be written: it goes to the
// messages instead, whole, and the run is marked as not fully audited.
func (g *Guard) auditFailed(err error, rec audit.Record) {
	g.mu.Lock()
	g.auditErrs = append(g.auditErrs, err)
	g.mu.Unlock()
	fmt.Fprintf(g.Messages, "nettrap: %v; the record follows:\n", err)
	if b, jerr := json.Marshal(rec); jerr == nil {
		fmt.Fprintf(g.Messages, "nettrap: audit record: %s\n", b)
	}
}

// WriteRecord adds a record of the caller's own (a stale marker) to the
// audit trail, with the same care for failed writes.
func (g *Guard) WriteRecord(rec audit.Record) {
	if rec.Schema == 0 {
		rec.Schema = audit.SchemaVersion
	}
	if rec.Time.IsZero() {
		rec.Time = time.Now().UTC()
	}
	if rec.RunID == "" {
		rec.RunID = g.RunID
	}
	g.keep(rec)
	if g.Audit != nil {
		if err := g.Audit.Write(rec); err != nil {
			g.auditFailed(err, rec)
		}
	}
}

// Counts returns a copy of the counts so far.
func (g *Guard) Counts() Counts {
	g.mu.Lock()
	defer g.mu.Unlock()
	c := g.counts
	c.AllowedByClass = map[string]int{}
	for cls := range g.plain {
		if n := g.plain[cls].Load(); n > 0 {
			c.AllowedByClass[classify.Class(cls).String()] = int(n)
		}
	}
	return c
}

// AuditErrors returns the audit writes that failed.
func (g *Guard) AuditErrors() []error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]error(nil), g.auditErrs...)
}
