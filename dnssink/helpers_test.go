package dnssink

import (
	"encoding/binary"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

// query builds a standard recursive query with dnsmessage, as a resolver
// would send it. name must end in ".".
func query(t testing.TB, id uint16, name string, typ dnsmessage.Type) []byte {
	t.Helper()
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: id, RecursionDesired: true})
	if err := b.StartQuestions(); err != nil {
		t.Fatal(err)
	}
	q := dnsmessage.Question{Name: dnsmessage.MustNewName(name), Type: typ, Class: dnsmessage.ClassINET}
	if err := b.Question(q); err != nil {
		t.Fatal(err)
	}
	msg, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return msg
}

// rawMsg assembles a message by hand: a header with the given flags and
// QDCOUNT (other counts 0), then body verbatim.
func rawMsg(id, flags, qdcount uint16, body ...[]byte) []byte {
	msg := make([]byte, headerLen)
	binary.BigEndian.PutUint16(msg[0:], id)
	binary.BigEndian.PutUint16(msg[2:], flags)
	binary.BigEndian.PutUint16(msg[4:], qdcount)
	for _, b := range body {
		msg = append(msg, b...)
	}
	return msg
}

// wireName encodes raw labels (bytes taken as they are, dots included)
// and the terminating root label.
func wireName(labels ...string) []byte {
	var b []byte
	for _, l := range labels {
		b = append(append(b, byte(len(l))), l...)
	}
	return append(b, 0)
}

// ptr is a compression pointer to off.
func ptr(off int) []byte { return []byte{0xC0 | byte(off>>8), byte(off)} }

// tail is a question's type and class IN.
func tail(typ uint16) []byte { return []byte{byte(typ >> 8), byte(typ), 0, 1} }

// Header flag bits used by the tests (RFC 1035 4.1.1, RFC 4035 3.2.2).
const (
	testRD = 1 << 8
	testCD = 1 << 4
)
