package guard

import (
	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/audit"
	"github.com/nettrap/nettrap/classify"
	"github.com/nettrap/nettrap/decision"
	"github.com/nettrap/nettrap/policy"
)

// Peers under --sealed: an allowed unix or loopback destination reaches
// only a socket of the confined tree. The supervisor finds the receiving
// socket while it makes the call, and asks peerOutside only about one
// held outside the tree, which is rare: the calls that reach the tree
// stay on the fast path (counted, not attributed).

// needsPeer tells whether some allowed attempt of the call reaches a
// socket on this machine: unix, loopback, or the unspecified address
// (which Linux routes to loopback) under --allow-unspecified.
func needsPeer(atts []decidedAttempt, allowUnspecified bool) bool {
	for _, a := range atts {
		if a.Kind != policy.Destination {
			continue
		}
		switch a.Class {
		case classify.Unix, classify.Loopback:
			return true
		case classify.Unspecified:
			if allowUnspecified {
				return true
			}
		}
	}
	return false
}

// peerCheck is the answer's PeerCheck for c, under --sealed.
func (g *Guard) peerCheck(c *decision.Call, atts []decidedAttempt) *decision.PeerCheck {
	if !g.Policy.Sealed || !needsPeer(atts, g.Policy.AllowUnspecified) {
		return nil
	}
	return &decision.PeerCheck{
		Outside: func(d classify.Dest, p decision.Peer) unix.Errno { return g.peerOutside(c, d, p) },
		Named:   g.Policy.NamesLocal,
	}
}

// uncount takes back the count of an allowed class, for an attempt
// counted as allowed when it was decided and recorded now after all.
func (g *Guard) uncount(cls classify.Class) {
	g.plain[cls].Add(-1)
}

// peerOutside decides a destination whose receiving socket is held
// outside the tree, while the call still waits: the policy's DecidePeer,
// attributed and recorded as any decision.
func (g *Guard) peerOutside(c *decision.Call, d classify.Dest, p decision.Peer) unix.Errno {
	o := originOf(c)
	tx := g.attribution().Begin(c)
	defer tx.End()
	a := decidedAttempt{Attempt: policy.Attempt{Kind: policy.Destination, Dest: d, Class: g.Resolvers.Classify(d)}}
	a.Context = tx.Who().Context
	a.decision = g.Policy.DecidePeer(a.Attempt, policy.Peer(p))
	g.uncount(a.Class)
	if a.decision.Audit {
		o.stack = readOrigin(c, tx.Who())
	}
	g.record(c, o, tx, []decidedAttempt{a})
	if a.decision.Verdict != audit.Denied {
		return 0
	}
	return a.decision.Errno
}
