package guard

import (
	"net/netip"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/audit"
	"github.com/nettrap/nettrap/classify"
	"github.com/nettrap/nettrap/decision"
	"github.com/nettrap/nettrap/dnssink"
	"github.com/nettrap/nettrap/policy"
)

// DNSSink is where blocked DNS lookups go (a *dnssink.Sink): a denied
// connect or send to a nameserver is redirected there, on the target's
// own socket, so that the resolver gets REFUSED at once and the denial
// names what was looked up.
type DNSSink interface {
	Addr(network string, v6 bool) netip.AddrPort
	Expect(network string, from netip.AddrPort, h func(dnssink.Query))
	Forget(network string, from netip.AddrPort)
}

// How long a redirected socket is watched: its first query is waited for
// firstQueryWait (a resolver sends it right after connect; without one the
// attempt is recorded as a plain denial then), and later queries (the
// AAAA after the A, a retry) are named for queryWatch.
const (
	firstQueryWait = time.Second
	queryWatch     = 30 * time.Second
)

// dnsRedirect returns the redirect of a call that is one denied attempt
// at a nameserver over an inet socket, or nil. Its Done records the
// attempt: at once if the call could not be redirected, else once per
// query the sink reads (named), or as a plain denial if none comes. The
// attribution is released at the first of those, so that the test's end
// is not rendered before its denial.
func (g *Guard) dnsRedirect(c *decision.Call, o origin, tx Transaction, atts []decidedAttempt) *decision.Redirect {
	if g.Sink == nil || len(atts) != 1 {
		return nil
	}
	a := atts[0]
	inet := a.Dest.Family == unix.AF_INET || a.Dest.Family == unix.AF_INET6
	if a.Kind != policy.Destination || a.Class != classify.DNS || !inet || a.decision.Verdict != audit.Denied {
		return nil
	}
	network := o.sock
	if network != "tcp" && network != "udp" {
		return nil
	}
	rd := &decision.Redirect{To4: g.Sink.Addr(network, false), To6: g.Sink.Addr(network, true)}
	rd.Done = func(local netip.AddrPort, ok bool) {
		if !ok {
			g.record(c, o, tx, atts)
			tx.End()
			return
		}
		a.redirected = true
		w := &dnsWatch{g: g, c: c, origin: o, tx: tx, attempt: a, network: network, local: local, settled: make(chan struct{})}
		g.mu.Lock()
		if g.watches == nil {
			g.watches = map[*dnsWatch]bool{}
		}
		g.watches[w] = true
		g.mu.Unlock()
		g.Sink.Expect(network, local, w.query)
		time.AfterFunc(firstQueryWait, w.firstWaitOver)
	}
	return rd
}

// dnsWatch follows one redirected socket.
type dnsWatch struct {
	g       *Guard
	c       *decision.Call
	origin  origin      // read when the call came: the socket outlives it, the caller may not
	tx      Transaction // the call's transaction, ended at the first record
	attempt decidedAttempt
	network string
	local   netip.AddrPort
	settled chan struct{} // closed at the first query or when none came
	mu      sync.Mutex
	queries int
	ended   bool
}

// query records one query the sink read from the socket. Queries after
// the first are reported on the ended transaction (see Transaction.End).
func (w *dnsWatch) query(q dnssink.Query) {
	w.mu.Lock()
	if w.ended {
		w.mu.Unlock()
		return
	}
	w.queries++
	first := w.queries == 1
	w.mu.Unlock()
	a := w.attempt
	a.lookup = lookupOf(q)
	w.g.record(w.c, w.origin, w.tx, []decidedAttempt{a})
	if first {
		w.tx.End()
		close(w.settled)
		time.AfterFunc(queryWatch, w.end)
	}
}

// firstWaitOver records the attempt as a plain denial if no query came.
func (w *dnsWatch) firstWaitOver() {
	w.mu.Lock()
	if w.queries > 0 || w.ended {
		w.mu.Unlock()
		return
	}
	w.ended = true
	w.mu.Unlock()
	w.g.Sink.Forget(w.network, w.local)
	w.g.forget(w)
	w.g.record(w.c, w.origin, w.tx, []decidedAttempt{w.attempt})
	w.tx.End()
	close(w.settled)
}

// end stops naming the socket's queries.
func (w *dnsWatch) end() {
	w.mu.Lock()
	w.ended = true
	w.mu.Unlock()
	w.g.Sink.Forget(w.network, w.local)
	w.g.forget(w)
}

func (g *Guard) forget(w *dnsWatch) {
	g.mu.Lock()
	delete(g.watches, w)
	g.mu.Unlock()
}

// EndLookups ends the watch of every redirected socket. Call it when the
// command has exited, before the attribution's verdicts are final. A
// socket that has not been named yet is waited for until its first query
// is read or its firstQueryWait is over (then it is a plain denial): the
// command may have sent its query and exited before the sink read it,
// and the query is already queued on the sink's socket, so cutting the
// wait short would lose the name.
func (g *Guard) EndLookups() {
	g.mu.Lock()
	ws := make([]*dnsWatch, 0, len(g.watches))
	for w := range g.watches {
		ws = append(ws, w)
	}
	g.mu.Unlock()
	for _, w := range ws {
		<-w.settled
		w.end()
	}
}

// lookupOf is a record's Lookup: "TXT _grpc_config.localhost", or what
// could be read of a malformed query.
func lookupOf(q dnssink.Query) string {
	switch {
	case q.Name != "" && q.Type != "":
		return q.Type + " " + q.Name
	case q.Name != "":
		return q.Name
	}
	return audit.LookupMalformed
}
