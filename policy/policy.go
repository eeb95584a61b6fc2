package policy

import (
	"fmt"
	"net/netip"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/audit"
	"github.com/nettrap/nettrap/classify"
)

// Mode is enforce (deny) or audit (allow, record what would be denied).
type Mode int

const (
	Enforce Mode = iota
	Audit
)

// ParseMode parses "enforce" or "audit". The error does not name the
// flag: the caller knows whether it came from --mode or NETTRAP_MODE.
func ParseMode(s string) (Mode, error) {
	switch strings.ToLower(s) {
	case "enforce", "":
		return Enforce, nil
	case "audit":
		return Audit, nil
	}
	return 0, fmt.Errorf("%q: want enforce or audit", s)
}

func (m Mode) String() string {
	if m == Audit {
		return "audit"
	}
	return "enforce"
}

// What an attempt is.
type Kind int

const (
	// Destination: a connect or send naming a destination.
	Destination Kind = iota
	// RawSocket: socket(2) asking for a packet or raw IP socket.
	RawSocket
	// IOURing: io_uring_setup(2).
	IOURing
	// ForeignABI: a network call through the i386, x32 or arm32 ABI.
	ForeignABI
	// SCTPSocket: socket(2) asking for SCTP, which connects through
	// setsockopt and sends to addresses in control messages.
	SCTPSocket
	// SourceRoute: an IPv4 source route or IPv6 routing header, which
	// sends the packet first to an address inside the option.
	SourceRoute
	// CrossProcess: ptrace attach, process_vm_writev or pidfd_getfd,
	// which could make an unconfined process do the networking.
	CrossProcess
	// FamilySocket: socket(2) of a family other than unix, inet, inet6,
	// netlink (and packet, which is RawSocket): XDP, vsock, Bluetooth,
	// CAN, TIPC, … reach other hosts with no address to check. Dest.Family
	// names the family.
	FamilySocket
	// InterfacePin: a socket or a message pinned to an interface other
	// than lo (Detail names it): a loopback destination then leaves
	// through that interface.
	InterfacePin
	// MulticastJoin: a setsockopt joining the multicast group (or IPv6
	// anycast address) in Dest.Addr: the kernel sends IGMP or MLD
	// reports naming it onto the segment. Allowed by an --allow rule
	// covering the group, whatever the rule's port, or a marked test.
	MulticastJoin
	// NetnsChange: a request that changes a network namespace (Detail
	// names it: "ioctl SIOCADDRT"). Aimed at the namespace nettrap
	// started in, a route, address or ARP entry can send an allowed
	// destination elsewhere. Markers and rules do not open it.
	NetnsChange
	// BPFAttach: attaching a BPF program (Detail: "BPF_LINK_CREATE
	// BPF_CGROUP_INET4_CONNECT") that can rewrite socket addresses or
	// redirect packets. Markers and rules do not open it.
	BPFAttach
)

// Attempt is the policy's view of one network attempt: no pids, no
// syscalls, only what the decision depends on.
type Attempt struct {
	Kind  Kind
	Dest  classify.Dest
	Class classify.Class
	// Detail completes the reason for the kinds that need it: the
	// interface of an InterfacePin, the option of a MulticastJoin, the
	// request of a NetnsChange or BPFAttach.
	Detail string
	// Harmless: a NetnsChange or BPFAttach that aims at a network
	// namespace the test made for itself, or attaches a program that
	// cannot redirect anything. Allowed, except under --sealed, where the
	// target is read from memory (or a descriptor) another thread could
	// change before the kernel acts.
	Harmless bool
	// Context is who is calling, once attribution knows (a later layer
	// fills it; the zero value is "a process, no test").
	Context Context
}

// Context says which test, if any, made the attempt.
type Context struct {
	// Marked: the attempt comes from a test that carries the network
	// marker (or matches --allow-test).
	Marked bool
	// AllowTest lists the --allow-test rules that name the test (or
	// every candidate of a parallel attempt), as written; empty when only
	// markers, or nothing, marked it.
	AllowTest []string `json:",omitempty"`
	// Marker: the test (or a candidate) carries the network marker
	// itself, whether or not a rule names it too. With AllowTest it says
	// what let a call through (MarkedReason).
	Marker bool `json:",omitempty"`
	// Collection: no test was running (init, TestMain, between tests).
	Collection bool
	// Toolchain: the go command's own call under `nettrap -- go test`
	// (module downloads, checksum database, VCS fetches), made from under
	// no test binary. Its destinations are allowed and audited; the
	// attempts with no destination to check are decided as for anyone.
	Toolchain bool
}

// Decision is the policy's answer for one attempt.
type Decision struct {
	Verdict audit.Decision
	Reason  string
	// Errno for a denial.
	Errno unix.Errno
	// Audit: the attempt goes to the audit trail (everything but the
	// plain allowed classes, which are only counted).
	Audit bool
}

// Policy decides attempts. The zero value denies with EPERM in enforce
// mode with no rules.
type Policy struct {
	Mode  Mode
	Rules []Rule
	Errno unix.Errno
	// Sealed: the code under test is not trusted (--sealed). Only the
	// rules, which come from nettrap's own command line, open anything: a
	// marker is the test's own word, so a marked test is decided like any
	// other, and its denial says the marker was ignored.
	Sealed bool
	// AllowUnspecified (--allow-unspecified) lets 0.0.0.0 and :: through,
	// the v4-mapped ::ffff:0.0.0.0 too (the class is judged unmapped, and
	// it reaches the same place): Linux routes them to loopback, so this
	// is the `listen on :0, dial ln.Addr()` habit. Each call it lets
	// through is audited, as under the rule `--allow ::/128` that does
	// the same: every way of letting a denied class through leaves a
	// record (ReasonAllowUnspecified). An AF_UNSPEC send that reads as
	// unspecified one way and as another class the other way keeps the
	// stricter class, and is not covered.
	AllowUnspecified bool
	// AllowUnix (--allow-unix) names unix sockets, by the name they were
	// bound with, that a call may reach under --sealed although their
	// listener is outside the confined tree (peer.go).
	AllowUnix []string
}

// ReasonAllowUnspecified is the reason of a call to the unspecified
// address that --allow-unspecified let through.
const ReasonAllowUnspecified = "allowed: --allow-unspecified"

// ReasonToolchain is the reason of an allowed call of the go command's own.
const ReasonToolchain = "allowed: the go command's own call (toolchain)"

// ReasonOwnNetns is the reason of a call allowed in a network namespace
// the confined tree made (classify.OwnNetns).
const ReasonOwnNetns = "allowed: in a network namespace the tests made, where nothing leads out"

// Decide decides one attempt.
func (p *Policy) Decide(a Attempt) Decision {
	if a.Class == classify.OwnNetns {
		// In both modes: the kernel keeps such a namespace from leading
		// anywhere but the tree's own namespaces (docs/threat-model.md, "Namespaces
		// the test makes").
		return Decision{Verdict: audit.Allowed, Reason: ReasonOwnNetns, Audit: true}
	}
	switch a.Kind {
	case RawSocket:
		return p.deny("raw and packet sockets put frames on the wire with no destination to check")
	case IOURing:
		return p.deny("io_uring can connect and send without passing through seccomp")
	case ForeignABI:
		return p.deny("calls through a 32-bit ABI that nettrap checks on the native one (network, setsockopt options, ptrace, process_vm_writev, pidfd_getfd, io_uring) are not decoded")
	case SourceRoute:
		return p.deny("a source route (IP_OPTIONS, IP_RETOPTS, IPV6_RTHDR) sends packets to an address inside the option, past the destination check")
	case CrossProcess:
		return p.deny("attaching to, writing into or taking descriptors from another process could make an unconfined process reach the network")
	case SCTPSocket:
		return p.deny("SCTP sockets connect through setsockopt and send to addresses in control messages, past the checks")
	case FamilySocket:
		return p.deny("only unix, inet, inet6 and netlink sockets may be created: " + a.Dest.FamilyName() +
			" sockets reach other hosts (or leave the network namespace) with no address to check")
	case InterfacePin:
		return p.deny("pinning a socket or a send to an interface other than lo (" + a.Detail +
			") sends even loopback-addressed packets out of that interface")
	case MulticastJoin:
		return p.decideJoin(a)
	case NetnsChange, BPFAttach:
		return p.decideNetns(a)
	}
	if a.Class.AllowedByDefault() {
		return Decision{Verdict: audit.Allowed, Reason: a.Class.String()}
	}
	if a.Class == classify.Unspecified && p.AllowUnspecified {
		return Decision{Verdict: audit.Allowed, Reason: ReasonAllowUnspecified, Audit: true}
	}
	if a.Dest.Family == unix.AF_INET || a.Dest.Family == unix.AF_INET6 {
		// An AF_UNSPEC send can be read two ways (see
		// classify.Dest.Unspec6): rules must cover both readings.
		r, ok := p.match(a.Dest.Addr)
		if ok && a.Dest.Unspec6.IsValid() {
			_, ok = p.match(a.Dest.Unspec6)
		}
		if ok {
			return Decision{Verdict: audit.Allowed, Reason: "allowed: --allow " + r.String(), Audit: true}
		}
	}
	if a.Context.Toolchain {
		return Decision{Verdict: audit.Allowed, Reason: ReasonToolchain, Audit: true}
	}
	if a.Context.Marked && !a.Context.Collection {
		if p.Sealed {
			return p.deny(audit.ReasonMarkerIgnored + "; " + denyReason(a))
		}
		return Decision{Verdict: audit.Allowed, Reason: MarkedReason(a.Context), Audit: true}
	}
	return p.deny(denyReason(a))
}

// ReasonMarked is the reason of a call let through by the test's marker.
const ReasonMarked = "allowed: marked test"

// MarkedReason is the reason of a marked test's allowed call: what let it
// through, the marker or the --allow-test rules that name the test, as
// written: "allowed: marked test", "allowed: --allow-test
// 'prices.^TestExternal$'", or both for a test (or parallel candidates)
// that both mark.
func MarkedReason(c Context) string {
	if len(c.AllowTest) == 0 {
		return ReasonMarked
	}
	rules := make([]string, len(c.AllowTest))
	for i, r := range c.AllowTest {
		rules[i] = "--allow-test " + shellQuote(r)
	}
	reason := "allowed: " + strings.Join(rules, ", ")
	if c.Marker {
		reason = ReasonMarked + " and " + strings.TrimPrefix(reason, "allowed: ")
	}
	return reason
}

// shellQuote quotes s for a shell, as a user would write a rule: 'a$'.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// decideJoin: a join is allowed by a rule whose prefix covers the group
// (a join has no port, so the rule's port does not matter), or for a
// marked test; otherwise denied with advice.
func (p *Policy) decideJoin(a Attempt) Decision {
	group := a.Dest.Addr.Addr()
	for _, r := range p.Rules {
		if r.covers(group) {
			return Decision{Verdict: audit.Allowed, Reason: "allowed: --allow " + r.String(), Audit: true}
		}
	}
	if a.Context.Toolchain {
		return Decision{Verdict: audit.Allowed, Reason: ReasonToolchain, Audit: true}
	}
	if a.Context.Marked && !a.Context.Collection {
		return Decision{Verdict: audit.Allowed, Reason: MarkedReason(a.Context), Audit: true}
	}
	return p.deny("joining " + group.String() + " (" + a.Detail + ") makes the kernel announce the group " +
		"with IGMP/MLD reports on the network and receive its traffic; allow it with --allow " + group.String())
}

// decideNetns: changes to nettrap's own network namespace, and programs
// that rewrite addresses, are never destinations: no marker or rule opens
// them. Only a harmless one passes, and not under --sealed.
func (p *Policy) decideNetns(a Attempt) Decision {
	what := "changing the network namespace nettrap started in (" + a.Detail +
		") could send an allowed destination elsewhere (routes, addresses, NAT, interfaces)"
	if a.Kind == BPFAttach {
		what = "attaching a BPF program (" + a.Detail +
			") that can rewrite socket addresses or redirect packets could send an allowed destination elsewhere"
	}
	if !a.Harmless {
		return p.deny(what)
	}
	if p.Sealed {
		return p.deny(a.Detail + " is denied outright under --sealed: what it acts on is read from memory " +
			"or a descriptor that another thread could change before the kernel acts")
	}
	return Decision{Verdict: audit.Allowed, Reason: a.Detail + " (the test's own network namespace, or a program that redirects nothing)"}
}

func (p *Policy) match(ap netip.AddrPort) (Rule, bool) {
	for _, r := range p.Rules {
		if r.Match(ap) {
			return r, true
		}
	}
	return Rule{}, false
}

func (p *Policy) deny(reason string) Decision {
	if p.Mode == Audit {
		return Decision{Verdict: audit.WouldDeny, Reason: reason, Audit: true}
	}
	errno := p.Errno
	if errno == 0 {
		errno = unix.EPERM
	}
	return Decision{Verdict: audit.Denied, Reason: reason, Errno: errno, Audit: true}
}

// denyReason explains a denied destination; the unspecified address gets
// advice, since dialing a listener's [::]:port is a common Go test habit.
func denyReason(a Attempt) string {
	switch a.Class {
	case classify.Unspecified:
		return "the unspecified address is not loopback, even though Linux routes it there: " +
			"listen on 127.0.0.1:0 and dial that, or opt in with --allow-unspecified (NETTRAP_ALLOW_UNSPECIFIED=1)"
	case classify.DNS:
		if a.Dest.Family == unix.AF_UNIX {
			return "connect to a name service daemon (nscd or systemd-resolved): lookups of hosts, users or groups through it are not allowed; localhost comes from /etc/hosts"
		}
		return "DNS query to a nameserver: tests must not resolve names over the network (localhost comes from /etc/hosts)"
	case classify.OtherFamily:
		return "socket family " + a.Dest.FamilyName() + " is not allowed"
	}
	return audit.ClassReason(a.Class.String())
}
