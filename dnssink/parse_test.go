package dnssink

import (
	"errors"
	"strings"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

func TestParseTypes(t *testing.T) {
	tests := []struct {
		name string
		typ  dnsmessage.Type
		want string
	}{
		{"example.com.", dnsmessage.TypeA, "A"},
		{"example.com.", dnsmessage.TypeAAAA, "AAAA"},
		{"_grpc_config.localhost.", dnsmessage.TypeTXT, "TXT"},
		{"_http._tcp.example.org.", dnsmessage.TypeSRV, "SRV"},
		{"example.net.", dnsmessage.TypeMX, "MX"},
		{"example.net.", dnsmessage.TypeALL, "ANY"},
		{"example.net.", dnsmessage.TypePTR, "PTR"},
		{"example.net.", dnsmessage.TypeHTTPS, "HTTPS"},
		{"example.net.", dnsmessage.Type(65280), "TYPE65280"},
		{"example.net.", dnsmessage.Type(0), "TYPE0"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			q, err := Parse(query(t, 0xBEEF, tt.name, tt.typ))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			want := Query{ID: 0xBEEF, Name: strings.TrimSuffix(tt.name, "."), Type: tt.want, Questions: 1}
			if q != want {
				t.Errorf("Parse = %+v, want %+v", q, want)
			}
		})
	}
}

func TestParseNames(t *testing.T) {
	long := strings.Repeat("a", 63)
	tests := []struct {
		desc string
		body []byte
		want string
	}{
		{"case kept", wireName("ExAmPle", "COM"), "ExAmPle.COM"},
		{"punycode IDN", wireName("xn--bcher-kva", "example"), "xn--bcher-kva.example"},
		{"raw UTF-8 IDN", wireName("bücher", "example"), `b\195\188cher.example`},
		{"dot in label", wireName("a.b", "example"), `a\.b.example`},
		{"backslash in label", wireName(`a\b`, "example"), `a\\b.example`},
		{"newline cannot forge a line", wireName("x\nnettrap: ok", "example"), `x\010nettrap:\032ok.example`},
		{"NUL and DEL", wireName("\x00\x7f", "example"), `\000\127.example`},
		{"root", wireName(), "."},
		{"longest name", wireName(long, long, long, strings.Repeat("b", 61)),
			strings.Join([]string{long, long, long, strings.Repeat("b", 61)}, ".")},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			msg := rawMsg(7, testRD, 1, tt.body, tail(uint16(dnsmessage.TypeA)))
			q, err := Parse(msg)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if q.Name != tt.want || q.Type != "A" || q.ID != 7 {
				t.Errorf("Parse = %+v, want name %q type A id 7", q, tt.want)
			}
		})
	}
}

func TestParseCompression(t *testing.T) {
	// Question 1 at offset 12: "svc.example.com" A. Question 2 is "www"
	// plus a pointer to "example.com" (offset 16) inside question 1.
	q1 := append(wireName("svc", "example", "com"), tail(1)...)
	q2 := append(append(wireName("www")[:4], ptr(16)...), tail(28)...)
	q, err := Parse(rawMsg(1, testRD, 2, q1, q2))
	if err != nil || q.Name != "svc.example.com" || q.Type != "A" || q.Questions != 2 {
		t.Errorf("Parse = %+v, %v; want svc.example.com A, 2 questions", q, err)
	}
	// Pointer chains: question 2 points into question 1, question 3 to
	// question 2's pointer (which must then point further back).
	q3 := append(ptr(33), tail(16)...) // 33: start of question 2 ("www" + pointer)
	msg := rawMsg(1, testRD, 3, q1, q2, q3)
	resp := Refused(msg)
	var p dnsmessage.Parser
	if _, err := p.Start(resp); err != nil {
		t.Fatal(err)
	}
	qs, err := p.AllQuestions()
	if err != nil {
		t.Fatalf("response questions: %v", err)
	}
	var got []string
	for _, q := range qs {
		got = append(got, q.Name.String()+" "+TypeString(q.Type))
	}
	want := "svc.example.com. A|www.example.com. AAAA|www.example.com. TXT"
	if strings.Join(got, "|") != want {
		t.Errorf("echoed questions = %q, want %q", strings.Join(got, "|"), want)
	}
}

func TestParseErrors(t *testing.T) {
	a := tail(1)
	long := strings.Repeat("a", 63)
	tests := []struct {
		desc    string
		msg     []byte
		want    error
		wantID  uint16
		wantQD  int
		wantNam string
	}{
		{"empty", nil, ErrShort, 0, 0, ""},
		{"short header", []byte{1, 2, 3, 4, 5}, ErrShort, 0, 0, ""},
		{"no question", rawMsg(9, testRD, 0), ErrNoQuestion, 9, 0, ""},
		{"question missing", rawMsg(9, testRD, 1), ErrShort, 9, 1, ""},
		{"label cut", rawMsg(9, 0, 1, []byte{7, 'e', 'x'}), ErrShort, 9, 1, ""},
		{"no root label", rawMsg(9, 0, 1, []byte{2, 'e', 'x'}), ErrShort, 9, 1, ""},
		{"type cut", rawMsg(9, 0, 1, wireName("ex"), []byte{0, 1}), ErrShort, 9, 1, ""},
		{"pointer cut", rawMsg(9, 0, 1, []byte{0xC0}), ErrShort, 9, 1, ""},
		{"pointer to itself", rawMsg(9, 0, 1, ptr(12), a), ErrBadName, 9, 1, ""},
		{"pointer loop", rawMsg(9, 0, 1, []byte{1, 'x'}, ptr(12), a), ErrBadName, 9, 1, ""},
		{"pointer forward", rawMsg(9, 0, 1, ptr(14), wireName("x"), a), ErrBadName, 9, 1, ""},
		{"reserved label type", rawMsg(9, 0, 1, []byte{0x40, 1}, a), ErrBadName, 9, 1, ""},
		{"name over 255", rawMsg(9, 0, 1, wireName(long, long, long, long), a), ErrBadName, 9, 1, ""},
		{"response", rawMsg(9, flagQR, 1, wireName("ex"), a), ErrNotQuery, 9, 1, "ex"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			q, err := Parse(tt.msg)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Parse error = %v, want %v", err, tt.want)
			}
			if q.Err != err {
				t.Errorf("Query.Err = %v, want the returned error", q.Err)
			}
			if q.ID != tt.wantID || q.Questions != tt.wantQD || q.Name != tt.wantNam {
				t.Errorf("Parse = %+v, want id %d, %d questions, name %q", q, tt.wantID, tt.wantQD, tt.wantNam)
			}
		})
	}
}

func TestParseIgnoresOtherSections(t *testing.T) {
	// Go's resolver adds an EDNS OPT record; other sections do not matter.
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: 3, RecursionDesired: true})
	b.StartQuestions()
	b.Question(dnsmessage.Question{Name: dnsmessage.MustNewName("example.org."), Type: dnsmessage.TypeAAAA, Class: dnsmessage.ClassINET})
	b.StartAdditionals()
	var rh dnsmessage.ResourceHeader
	if err := rh.SetEDNS0(1232, dnsmessage.RCodeSuccess, false); err != nil {
		t.Fatal(err)
	}
	if err := b.OPTResource(rh, dnsmessage.OPTResource{}); err != nil {
		t.Fatal(err)
	}
	msg, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	msg = append(msg, "trailing garbage"...)
	q, err := Parse(msg)
	if err != nil || q.Name != "example.org" || q.Type != "AAAA" {
		t.Errorf("Parse = %+v, %v; want example.org AAAA", q, err)
	}
}

// pointerChain is a root label at offset 0, then n pointers, each to the
// one before (the first to the root): the name at the last pointer decodes
// after n jumps. It returns the bytes and that last offset.
func pointerChain(n int) ([]byte, int) {
	b := []byte{0}
	for i := range n {
		b = append(b, ptr(max(0, 2*i-1))...)
	}
	return b, len(b) - 2
}

func TestPointerChainLimit(t *testing.T) {
	for _, n := range []int{1, maxPointers} {
		b, off := pointerChain(n)
		if wire, _, err := readName(b, off, nil); err != nil || len(wire) != 1 {
			t.Errorf("chain of %d: %x, %v; want the root", n, wire, err)
		}
	}
	b, off := pointerChain(maxPointers + 1)
	if _, _, err := readName(b, off, nil); !errors.Is(err, ErrBadName) {
		t.Errorf("chain of %d: %v, want ErrBadName", maxPointers+1, err)
	}
}
