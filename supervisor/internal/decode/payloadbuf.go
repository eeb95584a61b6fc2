package decode

import "sync"

// MaxDatagram is the largest payload any inet datagram socket takes
// (udp_sendmsg and ping_v4_sendmsg refuse more with EMSGSIZE), and
// MaxStreamSend bounds one emulated TCP Fast Open send: a longer one
// sends a prefix and returns its length, as a stream send may.
// MaxLocalDatagram bounds a unix or netlink datagram, which the kernel
// bounds by the socket's send buffer (SO_SNDBUF less 32 bytes).
const (
	MaxDatagram      = 0xffff
	MaxStreamSend    = 1 << 20
	MaxLocalDatagram = 8 << 20
)

// payloadPool recycles payload buffers of up to a datagram's size: a
// buffer per emulated send made the supervisor's garbage collector run
// every few hundred sends (quic-go's GSO batches are ~5 KiB each).
// It holds arrays, whose pointers a slice converts to and from without
// an allocation (a *[]byte would be allocated anew at each Put).
var payloadPool = sync.Pool{New: func() any { return new([MaxDatagram]byte) }}

// GetPayloadBuf returns a buffer of n bytes, from the pool if pooled (not
// for sendmmsg, whose messages all hold theirs at once: a pooled buffer
// each would be 64 KiB each).
func GetPayloadBuf(n int, pooled bool) []byte {
	if n > MaxDatagram || !pooled {
		return make([]byte, n)
	}
	return payloadPool.Get().(*[MaxDatagram]byte)[:n]
}

// PutPayloadBuf recycles b once nothing refers to it any more.
func PutPayloadBuf(b []byte) {
	if cap(b) == MaxDatagram {
		payloadPool.Put((*[MaxDatagram]byte)(b[:MaxDatagram]))
	}
}
