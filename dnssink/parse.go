package dnssink

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/net/dns/dnsmessage"
)

const (
	headerLen   = 12  // RFC 1035 4.1.1
	maxNameWire = 255 // RFC 1035 2.3.4: a name is at most 255 octets on the wire
	maxPointers = 127 // a name has at most 127 labels, so it needs no more jumps
	flagQR      = 0x8000
)

var (
	// ErrShort: the message is too short for its header or its question.
	ErrShort = errors.New("dnssink: message truncated")
	// ErrNoQuestion: the header claims no question, so nothing was asked.
	ErrNoQuestion = errors.New("dnssink: message has no question")
	// ErrNotQuery: the QR bit is set; the message is a response, not a query.
	ErrNotQuery = errors.New("dnssink: message is a response, not a query")
	// ErrBadName: the question's name is malformed (reserved label type,
	// pointer not pointing backwards, name longer than 255 octets).
	ErrBadName = errors.New("dnssink: malformed name")
)

// Query is what a DNS message asks. Name and Type come from the first
// question; Name is "" when that question could not be decoded.
type Query struct {
	ID uint16
	// Name in presentation format without the trailing dot, case as sent:
	// "_grpc_config.localhost". The root is ".". Bytes other than printable
	// ASCII, and "." or "\" inside a label, are escaped as in RFC 1035 5.1
	// (\DDD, \., \\), so the name is always one safe line of text.
	Name string
	// Type is the IANA mnemonic ("A", "AAAA", "TXT", ...) or "TYPEn"
	// (RFC 3597) for a type without one.
	Type string
	// Questions is the question count the header claims (QDCOUNT).
	Questions int
	// Err is set by Sink when the message could not be read as a query; it
	// is the error Parse returned.
	Err error
}

// Parse decodes the header and the first question of msg. It decodes what
// it can: a Query carrying the ID (when the header is readable) and the
// name (when the question is) is returned along with any error. A message
// with the QR bit set decodes fully but is reported as ErrNotQuery. Only the
// first question is read; QDCOUNT > 1 is not an error.
func Parse(msg []byte) (Query, error) {
	q, err := parse(msg)
	q.Err = err
	return q, err
}

func parse(msg []byte) (Query, error) {
	var p dnsmessage.Parser
	h, err := p.Start(msg)
	if err != nil {
		return Query{}, fmt.Errorf("%w: header: %w", ErrShort, err)
	}
	q := Query{ID: h.ID, Questions: int(binary.BigEndian.Uint16(msg[4:]))}
	if q.Questions == 0 {
		return q, ErrNoQuestion
	}
	name, typ, err := question(msg, headerLen)
	if err != nil {
		return q, fmt.Errorf("question: %w", err)
	}
	q.Name, q.Type = name, TypeString(typ)
	if h.Response {
		return q, ErrNotQuery
	}
	return q, nil
}

// question decodes the question at off: its name in presentation format
// and its type. dnsmessage is not used for names: it rejects a label
// holding a "." and does not escape control bytes, and both reach us.
func question(msg []byte, off int) (name string, typ dnsmessage.Type, err error) {
	var sb strings.Builder
	wire, _, err := readQuestion(msg, off, &sb)
	if err != nil {
		return "", 0, err
	}
	name = sb.String()
	if name == "" {
		name = "."
	}
	return name, dnsmessage.Type(binary.BigEndian.Uint16(wire[len(wire)-4:])), nil
}

// readQuestion reads the question at off and returns its uncompressed
// wire form (name, type, class), which Refused echoes, and the offset of
// what follows. sb, when not nil, gets the name in presentation format.
func readQuestion(msg []byte, off int, sb *strings.Builder) (wire []byte, next int, err error) {
	wire, end, err := readName(msg, off, sb)
	if err != nil {
		return nil, 0, err
	}
	if len(msg) < end+4 {
		return nil, 0, fmt.Errorf("%w: type and class", ErrShort)
	}
	return append(wire, msg[end:end+4]...), end + 4, nil
}

// readName follows labels and compression pointers from off, writing the
// presentation form to sb. It returns the uncompressed wire form and the
// offset just past the name where it started; sb may be nil. Each pointer
// must point before the place the previous one led to (before the name
// itself, for the first), so decoding always ends, and there may be no more
// than maxPointers, so a chain of pointers cannot make it slow.
func readName(msg []byte, off int, sb *strings.Builder) (wire []byte, end int, err error) {
	end, limit := -1, off
	for jumps := 0; ; {
		if off >= len(msg) {
			return nil, 0, fmt.Errorf("%w: name", ErrShort)
		}
		c := int(msg[off])
		switch c & 0xC0 {
		case 0x00:
			if len(wire)+1+c > maxNameWire {
				return nil, 0, fmt.Errorf("%w: longer than %d octets", ErrBadName, maxNameWire)
			}
			if c == 0 {
				if end < 0 {
					end = off + 1
				}
				return append(wire, 0), end, nil
			}
			if off+1+c > len(msg) {
				return nil, 0, fmt.Errorf("%w: label", ErrShort)
			}
			label := msg[off+1 : off+1+c]
			wire = append(append(wire, byte(c)), label...)
			writeLabel(sb, label)
			off += 1 + c
		case 0xC0:
			if off+1 >= len(msg) {
				return nil, 0, fmt.Errorf("%w: pointer", ErrShort)
			}
			ptr := int(binary.BigEndian.Uint16(msg[off:]) & 0x3FFF)
			if ptr >= limit {
				return nil, 0, fmt.Errorf("%w: pointer at offset %d to %d does not point back", ErrBadName, off, ptr)
			}
			if jumps++; jumps > maxPointers {
				return nil, 0, fmt.Errorf("%w: more than %d pointers", ErrBadName, maxPointers)
			}
			if end < 0 {
				end = off + 2
			}
			off, limit = ptr, ptr
		default:
			return nil, 0, fmt.Errorf("%w: reserved label type %#x", ErrBadName, c&0xC0)
		}
	}
}

// writeLabel escapes as dig and RFC 1035 5.1 do, so that a name cannot
// smuggle a newline or an escape sequence into a log line or annotation.
func writeLabel(sb *strings.Builder, label []byte) {
	if sb == nil {
		return
	}
	if sb.Len() > 0 {
		sb.WriteByte('.')
	}
	for _, b := range label {
		switch {
		case b == '.' || b == '\\':
			sb.WriteByte('\\')
			sb.WriteByte(b)
		case b <= ' ' || b >= 0x7F:
			fmt.Fprintf(sb, "\\%03d", b)
		default:
			sb.WriteByte(b)
		}
	}
}

// typeNames holds the mnemonics of the IANA DNS parameters registry that
// one may meet in a query.
var typeNames = map[dnsmessage.Type]string{
	1: "A", 2: "NS", 5: "CNAME", 6: "SOA", 10: "NULL", 12: "PTR",
	13: "HINFO", 15: "MX", 16: "TXT", 17: "RP", 18: "AFSDB", 24: "SIG",
	25: "KEY", 28: "AAAA", 29: "LOC", 33: "SRV", 35: "NAPTR", 36: "KX",
	37: "CERT", 39: "DNAME", 41: "OPT", 42: "APL", 43: "DS", 44: "SSHFP",
	45: "IPSECKEY", 46: "RRSIG", 47: "NSEC", 48: "DNSKEY", 49: "DHCID",
	50: "NSEC3", 51: "NSEC3PARAM", 52: "TLSA", 53: "SMIMEA", 55: "HIP",
	59: "CDS", 60: "CDNSKEY", 61: "OPENPGPKEY", 62: "CSYNC", 63: "ZONEMD",
	64: "SVCB", 65: "HTTPS", 99: "SPF", 108: "EUI48", 109: "EUI64",
	249: "TKEY", 250: "TSIG", 251: "IXFR", 252: "AXFR", 253: "MAILB",
	254: "MAILA", 255: "ANY", 256: "URI", 257: "CAA",
}

// TypeString names a query type: its mnemonic, or "TYPEn" (RFC 3597).
func TypeString(t dnsmessage.Type) string {
	if s, ok := typeNames[t]; ok {
		return s
	}
	return "TYPE" + strconv.Itoa(int(t))
}
