package decision

import (
	"net/netip"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/classify"
)

// verdict is what an Answer does with the call.
type verdict uint8

const (
	deny         verdict = iota // fail with an errno (the zero Answer: EPERM)
	redirect                    // deny, but make the call to a stand-in where it can
	allow                       // let it run (continued, or made by nettrap)
	allowCapless                // make it on a thread without capabilities
	allowPeers                  // make it only to a socket of the confined tree
)

// Answer is a decision on one call. It is built by Allow, AllowCapless,
// AllowPeers, Deny or Redirect, so that it never means two things at once
// (an allowed call carries no errno, a denied one no peer check); the
// zero Answer denies with EPERM.
type Answer struct {
	v        verdict
	errno    unix.Errno
	redirect *Redirect
	peer     *PeerCheck
	unkept   bool // Unkept's mark
}

// Allow lets the call run: the kernel runs it, or nettrap makes it itself
// with the bytes it checked (emulation).
func Allow() Answer { return Answer{v: allow} }

// AllowCapless lets the call run on a thread of nettrap's without
// capabilities instead: a netlink socket(2) is made there and handed
// over, a netlink send that names the kernel is sent with the bytes that
// were read; the kernel then refuses every change it asks for.
func AllowCapless() Answer { return Answer{v: allowCapless} }

// AllowPeers lets a connect or send reach only a socket of the confined
// tree, or one p.Outside lets through (--sealed). Such a call is made by
// nettrap or denied, never continued. A nil p is Allow.
func AllowPeers(p *PeerCheck) Answer {
	if p == nil {
		return Allow()
	}
	return Answer{v: allowPeers, peer: p}
}

// Deny fails the call with errno; 0 means EPERM.
func Deny(errno unix.Errno) Answer {
	if errno == 0 {
		errno = unix.EPERM
	}
	return Answer{v: deny, errno: errno}
}

// DenyRedirect denies a connect or send, but asks that the call be made
// to r's stand-in on loopback instead where it can be (emulation on, an
// inet socket); where it cannot, the call fails with errno. A nil r is
// Deny.
func DenyRedirect(errno unix.Errno, r *Redirect) Answer {
	a := Deny(errno)
	if r != nil {
		a.v, a.redirect = redirect, r
	}
	return a
}

// Allowed tells whether the call may run (in any of the allowed ways).
func (a Answer) Allowed() bool { return a.v >= allow }

// Errno is what a denied call fails with (never 0); 0 for an allowed one.
func (a Answer) Errno() unix.Errno {
	switch {
	case a.Allowed():
		return 0
	case a.errno == 0:
		return unix.EPERM
	}
	return a.errno
}

// Capless tells whether the call is to be made without capabilities.
func (a Answer) Capless() bool { return a.v == allowCapless }

// Peer is the peer check of an answer of AllowPeers; nil otherwise.
func (a Answer) Peer() *PeerCheck { return a.peer }

// Redirect is the stand-in of an answer of DenyRedirect; nil otherwise.
func (a Answer) Redirect() *Redirect { return a.redirect }

// Unkept marks a plain Allow whose decider keeps no reference to the
// Call (nor to anything it points to) once Decide returns: the engine
// may then use the call's memory for the next call. Any other answer
// is returned as it is.
func (a Answer) Unkept() Answer {
	if a.v == allow && a.peer == nil && a.redirect == nil {
		a.unkept = true
	}
	return a
}

// KeepsCall tells whether the decider may still refer to the Call after
// Decide: true unless the answer is Unkept.
func (a Answer) KeepsCall() bool { return !a.unkept }

// Redirect names the stand-in a denied call goes to, and is told how it
// went.
type Redirect struct {
	// To4 and To6 are the stand-in's addresses for the socket's type (TCP
	// or UDP): To4 for AF_INET sockets and v4-mapped destinations, To6
	// for other IPv6 ones (invalid: no IPv6 stand-in, fail with Errno).
	To4, To6 netip.AddrPort
	// Done is called exactly once: with the redirected socket's local
	// address (the stand-in sees its traffic come from there) when the
	// call was redirected, or with ok false when it failed with Errno.
	Done func(local netip.AddrPort, ok bool)
}

// PeerCheck, set by the decider on an allowed connect or send (under
// --sealed), asks that the call reach only a socket of the confined
// tree. The call is then made by nettrap or denied, never continued.
type PeerCheck struct {
	// Outside is asked about a destination whose receiving socket is
	// held outside the tree: it returns 0 to let the call go on (a rule
	// names it; audit mode), or the errno to fail the call with, having
	// recorded it.
	Outside func(d classify.Dest, p Peer) unix.Errno
	// Named tells whether nettrap's own command line names loopback (or
	// unspecified) destination d (an --allow rule). In the network
	// namespace --sealed gives the command, such a destination is the
	// host's, reached from outside and handed in; any other is the
	// namespace's own. nil: none is named.
	Named func(d classify.Dest) bool
}

// Peer is a receiving socket outside the confined tree, as found.
type Peer struct {
	Name string // the unix socket's bound name ("@…" abstract); "" none
	PID  int    // the process holding it; 0 unknown
	Comm string
	UID  int    // the socket's owner; -1 unknown
	Role string // "listener" or "receiver"
	Why  string // replaces "outside the tree" when set
}
