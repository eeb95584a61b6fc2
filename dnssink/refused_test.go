package dnssink

import (
	"bytes"
	"encoding/hex"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

func TestRefusedGolden(t *testing.T) {
	msg := query(t, 0xBEEF, "_grpc_config.localhost.", dnsmessage.TypeTXT)
	want, _ := hex.DecodeString("beef" + "8105" + "0001" + "0000" + "0000" + "0000" +
		"0c5f677270635f636f6e666967" + "096c6f63616c686f7374" + "00" + "0010" + "0001")
	if got := Refused(msg); !bytes.Equal(got, want) {
		t.Errorf("Refused =\n%x\nwant\n%x", got, want)
	}
}

// parseResponse reads a Refused answer with dnsmessage, as a client would.
func parseResponse(t *testing.T, resp []byte) (dnsmessage.Header, []dnsmessage.Question) {
	t.Helper()
	var p dnsmessage.Parser
	h, err := p.Start(resp)
	if err != nil {
		t.Fatalf("response header: %v", err)
	}
	qs, err := p.AllQuestions()
	if err != nil {
		t.Fatalf("response questions: %v", err)
	}
	if err := p.SkipAllAnswers(); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AnswerHeader(); err != dnsmessage.ErrSectionDone {
		t.Errorf("response has answers")
	}
	return h, qs
}

func TestRefusedEchoes(t *testing.T) {
	q := func(name string, typ uint16) []byte {
		return append(wireName(name, "example"), tail(typ)...)
	}
	tests := []struct {
		desc   string
		flags  uint16
		qd     uint16
		body   [][]byte
		wantQs int
	}{
		{"plain query, RD", testRD, 1, [][]byte{q("a", 1)}, 1},
		{"no RD", 0, 1, [][]byte{q("a", 28)}, 1},
		{"CD kept", testRD | testCD, 1, [][]byte{q("a", 1)}, 1},
		{"opcode STATUS", 2 << 11, 1, [][]byte{q("a", 1)}, 1},
		{"opcode UPDATE", 5<<11 | testRD, 1, [][]byte{q("a", 6)}, 1},
		{"AA/TC/AD/RCODE dropped", 1<<10 | 1<<9 | 1<<5 | 3, 1, [][]byte{q("a", 1)}, 1},
		{"two questions", testRD, 2, [][]byte{q("a", 1), q("b", 28)}, 2},
		{"zero questions", testRD, 0, nil, 0},
		{"count above questions", testRD, 5, [][]byte{q("a", 1)}, 1},
		{"malformed question", testRD, 1, [][]byte{{0x40}}, 0},
		{"second malformed", testRD, 2, [][]byte{q("a", 1), {0xC0, 0xFF}}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			msg := rawMsg(0x1234, tt.flags, tt.qd, tt.body...)
			var p dnsmessage.Parser
			in, _ := p.Start(msg)
			h, qs := parseResponse(t, Refused(msg))
			want := dnsmessage.Header{ID: 0x1234, Response: true, OpCode: in.OpCode,
				RecursionDesired: in.RecursionDesired, CheckingDisabled: in.CheckingDisabled,
				RCode: dnsmessage.RCodeRefused}
			if h != want {
				t.Errorf("header = %+v, want %+v", h, want)
			}
			if len(qs) != tt.wantQs {
				t.Fatalf("%d questions echoed, want %d", len(qs), tt.wantQs)
			}
			off := headerLen
			for i, rq := range qs {
				_, next, err := readQuestion(msg, off, nil)
				if err != nil {
					t.Fatal(err)
				}
				mq := msg[off:next]
				off = next
				b := dnsmessage.NewBuilder(nil, dnsmessage.Header{})
				b.StartQuestions()
				b.Question(rq)
				packed, _ := b.Finish()
				if !bytes.Equal(packed[headerLen:], mq) {
					t.Errorf("question %d echoed as %x, sent %x", i, packed[headerLen:], mq)
				}
			}
		})
	}
}

func TestRefusedDrops(t *testing.T) {
	for desc, msg := range map[string][]byte{
		"empty":            nil,
		"short header":     {0xBE, 0xEF, 1, 0, 0, 1, 0, 0, 0, 0, 0},
		"response":         rawMsg(1, flagQR|testRD, 1, wireName("a"), tail(1)),
		"refused response": Refused(query(t, 1, "a.", dnsmessage.TypeA)),
	} {
		if got := Refused(msg); got != nil {
			t.Errorf("%s: Refused = %x, want nil (drop)", desc, got)
		}
	}
}

func TestRefusedBoundsDecompression(t *testing.T) {
	// One long name, then many questions of 6 bytes each pointing at it:
	// echoed uncompressed, they would make the answer ~40 times larger.
	long := "abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0"
	body := [][]byte{append(wireName(long, long, long), tail(1)...)}
	const n = 1000
	for range n {
		body = append(body, append(ptr(headerLen), tail(1)...))
	}
	msg := rawMsg(5, testRD, n+1, body...)
	resp := Refused(msg)
	if len(resp) > len(msg) {
		t.Errorf("answer is %d bytes, query %d", len(resp), len(msg))
	}
	h, qs := parseResponse(t, resp)
	if h.RCode != dnsmessage.RCodeRefused || len(qs) == 0 || len(qs) > n {
		t.Errorf("answer: rcode %v, %d questions", h.RCode, len(qs))
	}
	// A small query is never cut below 512 bytes.
	small := rawMsg(6, testRD, 2, append(wireName(long, long), tail(1)...), append(ptr(headerLen), tail(28)...))
	if _, qs := parseResponse(t, Refused(small)); len(qs) != 2 {
		t.Errorf("small query: %d questions echoed, want 2", len(qs))
	}
}
