package policy

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/nettrap/nettrap/audit"
	"github.com/nettrap/nettrap/classify"
	"golang.org/x/sys/unix"
)

// Peers under --sealed.
//
// A unix or loopback destination is a socket on this machine, and what
// listens there may reach the network for the caller (a Docker socket,
// an HTTP proxy on 127.0.0.1, an SSH agent). Under --sealed such a call
// reaches only a socket of the confined tree, or one that nettrap's own
// command line names: --allow-unix for a unix socket, an --allow rule
// for a loopback address. The supervisor learns the receiving socket's
// owner while it makes the call (package supervisor, peer.go), and asks
// DecidePeer only when that owner is outside the tree.

// ReasonPeerOutside starts the reason of a call denied because its
// receiving socket belongs to a process outside the confined tree.
const ReasonPeerOutside = "sealed: peer outside the tree"

// Peer is a receiving socket outside the confined tree, as the
// supervisor found it.
type Peer struct {
	// Name is the name the receiving unix socket was bound with
	// ("/var/run/docker.sock", "@name" for an abstract one), or "" (an
	// inet socket, or a unix socket without a name).
	Name string
	// PID and Comm name the process holding it (0 and "": not found, e.g.
	// a process of another pid namespace).
	PID  int
	Comm string
	// UID owns the socket (-1: unknown), named when the process is not
	// (an unprivileged nettrap cannot look into other users' processes).
	UID int
	// Role is "listener" (a stream socket's, the default) or "receiver"
	// (a datagram's).
	Role string
	// Why, when set, replaces "outside the tree" (e.g. "in a network
	// namespace nettrap cannot inspect").
	Why string
}

// Describe words the peer for a denial line: "listener pid 123 dockerd,
// outside the tree".
func (p Peer) Describe() string {
	who := cmpOr(p.Role, "listener")
	switch {
	case p.PID > 0 && p.Comm != "":
		who += fmt.Sprintf(" pid %d %s", p.PID, p.Comm)
	case p.PID > 0:
		who += fmt.Sprintf(" pid %d", p.PID)
	case p.UID >= 0:
		who += fmt.Sprintf(" of uid %d", p.UID)
	default:
		who += " of an unknown process"
	}
	return who + ", " + cmpOr(p.Why, "outside the tree")
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// ParseAllowUnix checks one --allow-unix value: an absolute path
// ("/var/run/docker.sock", cleaned) or an abstract name ("@name"). It is
// matched against the name the receiving socket was bound with, so a
// relative path could never match and is refused. The error does not
// name the flag.
func ParseAllowUnix(s string) (string, error) {
	orig := s
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return "", fmt.Errorf("%q: empty (want an absolute socket path, or @NAME for an abstract name)", orig)
	case s == "@":
		return "", fmt.Errorf("%q: an abstract name needs a name after @", orig)
	case s[0] == '@':
		return s, nil
	case s[0] != '/':
		return "", fmt.Errorf("%q: not an absolute path (want /path/to/socket, or @NAME for an abstract name)", orig)
	case len(s) >= 108:
		return "", fmt.Errorf("%q: longer than a unix socket name can be (107 bytes)", orig)
	}
	return path.Clean(s), nil
}

// DecidePeer decides an attempt (a unix or loopback destination) whose
// receiving socket is outside the confined tree, under --sealed:
// allowed when --allow-unix names the unix socket's bound name, or an
// --allow rule covers the inet destination; denied otherwise, with a
// reason naming the peer.
func (p *Policy) DecidePeer(a Attempt, peer Peer) Decision {
	if a.Dest.Family == unix.AF_UNIX {
		for _, name := range p.AllowUnix {
			if peer.Name != "" && peer.Name == name {
				return Decision{Verdict: audit.Allowed, Reason: "allowed: --allow-unix " + name, Audit: true}
			}
		}
		return p.denyPeer(ReasonPeerOutside + " (" + peer.Describe() +
			"): a local daemon could reach the network for the caller; name it with --allow-unix PATH to let it through")
	}
	if r, ok := p.match(a.Dest.Addr); ok {
		return Decision{Verdict: audit.Allowed, Reason: "allowed: --allow " + r.String(), Audit: true}
	}
	return p.denyPeer(ReasonPeerOutside + " (" + peer.Describe() +
		"): a local service could reach the network for the caller; allow it with --allow " + a.Dest.Addr.String())
}

// NamesLocal tells whether nettrap's own command line names local
// destination d: an --allow rule for an inet address, --allow-unix @NAME
// for an abstract unix name. Under --sealed with a network namespace of
// the command's own, such a destination is the host's (the namespace
// has a loopback and abstract names of its own, which need no rule).
func (p *Policy) NamesLocal(d classify.Dest) bool {
	switch d.Family {
	case unix.AF_INET, unix.AF_INET6:
		_, ok := p.match(d.Addr)
		return ok
	case unix.AF_UNIX:
		return d.Abstract && slices.Contains(p.AllowUnix, "@"+d.Path)
	}
	return false
}

// denyPeer denies with ECONNREFUSED, whatever --errno says: what a client
// sees when nothing listens there, so that it gives up (or falls back) as
// it would on a machine without that daemon. The connection nettrap made
// on the caller's socket was shut down first (the socket stays
// connected, unusable).
func (p *Policy) denyPeer(reason string) Decision {
	d := p.deny(reason)
	if d.Verdict == audit.Denied {
		d.Errno = unix.ECONNREFUSED
	}
	return d
}
