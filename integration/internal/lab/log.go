package lab

import (
	"bytes"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"time"
)

// Record is one thing that arrived at the outside: a TCP connection (with
// all the data read from it so far), a UDP datagram, or a captured frame.
type Record struct {
	Seq    int
	Kind   string         // "tcp", "udp" or "frame"
	Local  netip.AddrPort // tcp, udp: the address it arrived at
	Remote netip.AddrPort // tcp, udp: the sender
	Data   []byte         // payload; for a frame, the whole Ethernet frame
}

func (r Record) String() string {
	if r.Kind == "frame" {
		return fmt.Sprintf("#%d frame %s", r.Seq, describeFrame(r.Data))
	}
	return fmt.Sprintf("#%d %s %s -> %s %q", r.Seq, r.Kind, r.Remote, r.Local, r.Data)
}

// Contains reports whether r's data holds b.
func (r Record) Contains(b []byte) bool { return bytes.Contains(r.Data, b) }

// log keeps records in order of arrival and wakes waiters on change.
type log struct {
	mu      sync.Mutex
	recs    []Record
	changed chan struct{}
}

func newLog() *log { return &log{changed: make(chan struct{})} }

// add appends r and returns its index.
func (g *log) add(r Record) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	r.Seq = len(g.recs)
	g.recs = append(g.recs, r)
	g.wake()
	return r.Seq
}

// appendData adds data to record i (a TCP connection).
func (g *log) appendData(i int, data []byte) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.recs[i].Data = append(g.recs[i].Data, data...)
	g.wake()
}

func (g *log) wake() {
	close(g.changed)
	g.changed = make(chan struct{})
}

// Records returns a copy of everything so far.
func (g *log) Records() []Record {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]Record, len(g.recs))
	for i, r := range g.recs {
		r.Data = append([]byte(nil), r.Data...)
		out[i] = r
	}
	return out
}

// WaitFor waits until some record satisfies pred and returns it. The
// timeout only bounds a broken run: callers wait for something that must
// come (a leak shown unguarded, a sentinel).
func (g *log) WaitFor(pred func(Record) bool, timeout time.Duration) (Record, bool) {
	deadline := time.After(timeout)
	for {
		g.mu.Lock()
		for _, r := range g.recs {
			if pred(r) {
				g.mu.Unlock()
				return r, true
			}
		}
		ch := g.changed
		g.mu.Unlock()
		select {
		case <-ch:
		case <-deadline:
			return Record{}, false
		}
	}
}

// Dump renders every record, for failure messages.
func (g *log) Dump() string {
	var b strings.Builder
	for _, r := range g.Records() {
		b.WriteString(r.String() + "\n")
	}
	if b.Len() == 0 {
		return "(nothing arrived)\n"
	}
	return b.String()
}
