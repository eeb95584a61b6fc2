package fakehost

import (
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nettrap/nettrap/integration/internal/sandbox"
)

// maxData is how many first bytes of a connection or datagram are kept.
const maxData = 512

// Record is one accepted connection or received datagram.
type Record struct {
	Seq    int            // order of arrival, from 0
	Proto  string         // "tcp" or "udp"
	Local  netip.AddrPort // the address the sender aimed at
	Remote netip.AddrPort // the sender
	Data   []byte         // first bytes received (TCP: filled in as they arrive)
	Query  string         // DNS question name ("example.com."), if Data was a query
	// Sentinel is set once the record carries a whole sentinel sent by
	// this host's [Host.Probe].
	Sentinel bool
}

func (r Record) String() string {
	s := fmt.Sprintf("#%d %s %s -> %s %q", r.Seq, r.Proto, r.Remote, r.Local, r.Data)
	if r.Query != "" {
		s += " query=" + r.Query
	}
	if r.Sentinel {
		s += " (sentinel)"
	}
	return s
}

// Host is a set of recording listeners. Its methods are safe for concurrent use.
type Host struct {
	mu      sync.Mutex
	recs    []Record
	tokens  map[string]bool // sentinel tokens issued by Probe
	changed chan struct{}   // closed and replaced on every change
	closers []io.Closer
	wg      sync.WaitGroup
	closed  bool
}

// Start listens on every endpoint and stops when t ends. It requires the
// sandbox and fails t when an endpoint cannot be served.
func Start(t testing.TB, eps ...Endpoint) *Host {
	t.Helper()
	sandbox.Require(t)
	h := &Host{changed: make(chan struct{}), tokens: map[string]bool{}}
	t.Cleanup(h.Close)
	for _, ep := range eps {
		if err := h.serve(ep); err != nil {
			t.Fatalf("fakehost: %v", err)
		}
	}
	return h
}

func (h *Host) serve(ep Endpoint) error {
	switch ep.Proto {
	case "tcp":
		return h.serveTCP(ep.Addr)
	case "udp":
		return h.serveUDP(ep.Addr)
	}
	return fmt.Errorf("endpoint %s: unknown protocol", ep)
}

// Close stops all listeners and waits for their goroutines.
func (h *Host) Close() {
	h.mu.Lock()
	h.closed = true
	cs := h.closers
	h.closers = nil
	h.mu.Unlock()
	for _, c := range cs {
		_ = c.Close()
	}
	h.wg.Wait()
}

// track registers c to be closed by Close; it reports false (and closes c)
// when the host is already closed.
func (h *Host) track(c io.Closer) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		_ = c.Close()
		return false
	}
	h.closers = append(h.closers, c)
	return true
}

// add appends r and returns its index.
func (h *Host) add(r Record) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	r.Seq = len(h.recs)
	r.Sentinel = h.isSentinelLocked(r)
	h.recs = append(h.recs, r)
	h.notifyLocked()
	return r.Seq
}

// update lets f change record i in place.
func (h *Host) update(i int, f func(*Record)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f(&h.recs[i])
	h.recs[i].Sentinel = h.isSentinelLocked(h.recs[i])
	h.notifyLocked()
}

func (h *Host) notifyLocked() {
	close(h.changed)
	h.changed = make(chan struct{})
}

// snapshot returns a copy of the records from index from on.
func (h *Host) snapshot(from int) []Record {
	h.mu.Lock()
	defer h.mu.Unlock()
	from = min(from, len(h.recs))
	out := make([]Record, 0, len(h.recs)-from)
	for _, r := range h.recs[from:] {
		r.Data = slices.Clone(r.Data)
		out = append(out, r)
	}
	return out
}

// Mark returns a cursor at the end of what is recorded now. Take it before
// the action a check is about.
func (h *Host) Mark() Cursor {
	h.mu.Lock()
	defer h.mu.Unlock()
	return Cursor{next: len(h.recs)}
}

// Since returns a copy of what was recorded after c, in order of arrival.
func (h *Host) Since(c Cursor) []Record { return h.snapshot(c.next) }

// WaitFor waits until a record made after c satisfies pred and returns it.
// It returns false when timeout passes first. This is a wait for something
// the test caused, not a timed assertion: the timeout only bounds a broken
// run. Records before c are never looked at, so an earlier check's traffic
// cannot satisfy this one.
func (h *Host) WaitFor(c Cursor, pred func(Record) bool, timeout time.Duration) (Record, bool) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		h.mu.Lock()
		ch := h.changed
		h.mu.Unlock()
		for _, r := range h.Since(c) {
			if pred(r) {
				return r, true
			}
		}
		select {
		case <-ch:
		case <-deadline.C:
			return Record{}, false
		}
	}
}

// Dump renders all records, one a line, for failure messages.
func (h *Host) Dump() string {
	var b strings.Builder
	for _, r := range h.snapshot(0) {
		b.WriteString(r.String())
		b.WriteByte('\n')
	}
	if b.Len() == 0 {
		return "(no records)\n"
	}
	return b.String()
}

// To matches records aimed at addr over proto ("" matches any protocol).
func To(proto string, addr netip.AddrPort) func(Record) bool {
	return func(r Record) bool { return r.Local == addr && (proto == "" || r.Proto == proto) }
}

// Queried matches DNS queries for name (with or without the final dot).
func Queried(name string) func(Record) bool {
	name = strings.TrimSuffix(name, ".") + "."
	return func(r Record) bool { return strings.EqualFold(r.Query, name) }
}
