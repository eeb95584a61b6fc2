package dnssink

import (
	"encoding/binary"

	"golang.org/x/net/dns/dnsmessage"
)

// minEchoLimit is the classic UDP DNS size (RFC 1035 2.3.4). Refused never
// grows past it or the query's own size, whichever is larger: decompressing
// the questions could otherwise turn a small query into a large answer.
const minEchoLimit = 512

// Refused returns a REFUSED response to msg: the ID, opcode, RD and CD bits
// and the question section echoed (decompressed), QR set, every other
// section empty. It returns nil, meaning "drop", when the header cannot be
// read or when msg is itself a response (never answer answers).
//
// A malformed question section still gets REFUSED: the questions that
// decode are echoed and the rest are left out, so a client waiting for an
// answer to its ID fails fast instead of timing out.
func Refused(msg []byte) []byte {
	var p dnsmessage.Parser
	h, err := p.Start(msg)
	if err != nil || h.Response {
		return nil
	}
	limit := max(len(msg), minEchoLimit)
	out := make([]byte, headerLen, minEchoLimit)
	binary.BigEndian.PutUint16(out[0:], h.ID)
	flags := uint16(flagQR) | uint16(h.OpCode&0xF)<<11 | uint16(dnsmessage.RCodeRefused)
	if h.RecursionDesired {
		flags |= 1 << 8
	}
	if h.CheckingDisabled {
		flags |= 1 << 4
	}
	binary.BigEndian.PutUint16(out[2:], flags)

	qdcount := int(binary.BigEndian.Uint16(msg[4:]))
	off, n := headerLen, 0
	for ; n < qdcount; n++ {
		wire, next, err := readQuestion(msg, off, nil)
		if err != nil || len(out)+len(wire) > limit {
			break
		}
		out = append(out, wire...)
		off = next
	}
	binary.BigEndian.PutUint16(out[4:], uint16(n))
	return out
}
