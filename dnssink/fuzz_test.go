package dnssink

import (
	"encoding/binary"
	"errors"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

func fuzzSeeds(f *testing.F) {
	f.Add(query(f, 1, "_grpc_config.localhost.", dnsmessage.TypeTXT))
	f.Add(query(f, 2, "example.com.", dnsmessage.TypeAAAA))
	f.Add(rawMsg(3, testRD, 2, wireName("a.b", "c"), tail(33), ptr(14), tail(1)))
	f.Add(rawMsg(4, flagQR, 1, wireName("x"), tail(1)))
	f.Add(rawMsg(5, 0, 0))
	f.Add([]byte{1, 2, 3})
	f.Add(rawMsg(6, testRD, 1, ptr(12), tail(1)))
}

// FuzzParse: Parse never panics; a name it returns is one line of
// printable ASCII without spaces; a success has a name and a type.
func FuzzParse(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, msg []byte) {
		q, err := Parse(msg)
		for i := 0; i < len(q.Name); i++ {
			if c := q.Name[i]; c <= ' ' || c >= 0x7F {
				t.Fatalf("name %q holds byte %#x", q.Name, c)
			}
		}
		if len(q.Name) > 4*maxNameWire {
			t.Fatalf("name of %d bytes", len(q.Name))
		}
		if err == nil && (q.Name == "" || q.Type == "" || q.Questions < 1) {
			t.Fatalf("success without a question: %+v", q)
		}
		if err != nil && !errors.Is(err, ErrShort) && !errors.Is(err, ErrBadName) &&
			!errors.Is(err, ErrNoQuestion) && !errors.Is(err, ErrNotQuery) {
			t.Fatalf("unexpected error kind: %v", err)
		}
	})
}

// FuzzRefused: Refused never panics, and a non-nil answer is a response
// with the query's ID and RCODE REFUSED, no larger than needed, whose
// questions read back as the query's first ones.
func FuzzRefused(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, msg []byte) {
		resp := Refused(msg)
		if resp == nil {
			if len(msg) >= headerLen && binary.BigEndian.Uint16(msg[2:])&flagQR == 0 {
				t.Fatalf("no answer to a query with a readable header")
			}
			return
		}
		var p dnsmessage.Parser
		h, err := p.Start(resp)
		if err != nil {
			t.Fatalf("answer does not parse: %v", err)
		}
		if h.ID != binary.BigEndian.Uint16(msg) || !h.Response || h.RCode != dnsmessage.RCodeRefused {
			t.Fatalf("answer header %+v for query id %#x", h, binary.BigEndian.Uint16(msg))
		}
		if len(resp) > max(len(msg), minEchoLimit) {
			t.Fatalf("answer of %d bytes to a query of %d", len(resp), len(msg))
		}
		qd := int(binary.BigEndian.Uint16(resp[4:]))
		off, inOff := headerLen, headerLen
		for i := range qd {
			got, next, err := readQuestion(resp, off, nil)
			if err != nil {
				t.Fatalf("echoed question %d does not parse: %v", i, err)
			}
			sent, inNext, _ := readQuestion(msg, inOff, nil)
			if string(got) != string(sent) {
				t.Fatalf("question %d echoed as %x, sent %x", i, got, sent)
			}
			off, inOff = next, inNext
		}
		if off != len(resp) {
			t.Fatalf("%d bytes after the questions", len(resp)-off)
		}
	})
}
