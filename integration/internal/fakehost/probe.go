package fakehost

import (
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/net/dns/dnsmessage"
	"golang.org/x/sys/unix"
)

// Cursor is a point in a host's records (see [Host.Mark]). A check made
// from a cursor sees only what arrived after it, so neither an earlier
// check's traffic nor its sentinel (perhaps still being read) can satisfy
// or fail it.
type Cursor struct{ next int }

// tokenSeq numbers sentinel tokens across all hosts of the process, so no
// two probes ever carry the same token.
var tokenSeq atomic.Uint64

// tokenZone ends a sentinel's DNS query name.
const tokenZone = ".sentinel.invalid."

// Probe sends a sentinel carrying a fresh token to e and waits until the
// host has recorded it whole. Port 53 endpoints get the token as a DNS
// query name, so the fake DNS reads it over TCP as well as over UDP.
func (h *Host) Probe(e Endpoint, timeout time.Duration) (Record, error) {
	c := h.Mark()
	tok := fmt.Sprintf("fakehost-%d-%d", os.Getpid(), tokenSeq.Add(1))
	h.mu.Lock()
	h.tokens[tok] = true
	h.mu.Unlock()
	if err := sendSentinel(e, tok); err != nil {
		return Record{}, fmt.Errorf("sentinel to %s: %w", e, err)
	}
	r, ok := h.WaitFor(c, func(r Record) bool {
		return To(e.Proto, e.Addr)(r) && r.Sentinel && recordToken(r) == tok
	}, timeout)
	if !ok {
		return Record{}, fmt.Errorf("sentinel %s to %s never recorded", tok, e)
	}
	return r, nil
}

// Arrived returns what reached e after c, sentinels aside: an empty result
// proves that nothing was sent to e since c. It probes e first and waits
// for the probe: accept and receive queues are FIFO, and the host records
// each endpoint's connections and datagrams in queue order, so anything
// sent to e before the probe is recorded by then.
func (h *Host) Arrived(c Cursor, e Endpoint, timeout time.Duration) ([]Record, error) {
	if _, err := h.Probe(e, timeout); err != nil {
		return nil, err
	}
	var out []Record
	for _, r := range h.Since(c) {
		if To(e.Proto, e.Addr)(r) && !r.Sentinel {
			out = append(out, r)
		}
	}
	return out, nil
}

// isSentinelLocked reports whether r carries a whole token issued by Probe.
func (h *Host) isSentinelLocked(r Record) bool {
	tok := recordToken(r)
	return tok != "" && h.tokens[tok]
}

// recordToken is the token r would carry if it were a sentinel.
func recordToken(r Record) string {
	if r.Query != "" {
		if tok, ok := strings.CutSuffix(r.Query, tokenZone); ok {
			return tok
		}
		return ""
	}
	return string(r.Data)
}

func sendSentinel(e Endpoint, tok string) error {
	payload := []byte(tok)
	if e.Addr.Port() == 53 {
		q, err := sentinelQuery(tok)
		if err != nil {
			return err
		}
		payload = q
		if e.Proto == "tcp" {
			payload = append(binary.BigEndian.AppendUint16(nil, uint16(len(q))), q...)
		}
	}
	c, err := net.Dial(e.Proto, e.Addr.String())
	if err != nil {
		return err
	}
	defer c.Close()
	if uc, ok := c.(*net.UDPConn); ok && e.Addr.Addr().Is4() {
		// Needed for the limited broadcast endpoint; harmless elsewhere.
		if err := setBroadcast(uc); err != nil {
			return err
		}
	}
	_, err = c.Write(payload)
	return err
}

// sentinelQuery is an A query for tok in a zone no real resolver serves.
func sentinelQuery(tok string) ([]byte, error) {
	name, err := dnsmessage.NewName(tok + tokenZone)
	if err != nil {
		return nil, err
	}
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{RecursionDesired: true})
	if err := b.StartQuestions(); err != nil {
		return nil, err
	}
	if err := b.Question(dnsmessage.Question{Name: name, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET}); err != nil {
		return nil, err
	}
	return b.Finish()
}

func setBroadcast(c *net.UDPConn) error {
	raw, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_BROADCAST, 1)
	}); err != nil {
		return err
	}
	return os.NewSyscallError("setsockopt SO_BROADCAST", serr)
}
