package supervisor

import "sync"

// maxDatagram is the largest payload any inet datagram socket takes
// (udp_sendmsg and ping_v4_sendmsg refuse more with EMSGSIZE), and
// maxStreamSend bounds one emulated TCP Fast Open send: a longer one
// sends a prefix and returns its length, as a stream send may.
// maxLocalDatagram bounds a unix or netlink datagram, which the kernel
// bounds by the socket's send buffer (SO_SNDBUF less 32 bytes).
const (
	maxDatagram      = 0xffff
	maxStreamSend    = 1 << 20
	maxLocalDatagram = 8 << 20
)

// payloadPool recycles payload buffers of up to a datagram's size: a
// buffer per emulated send made the supervisor's garbage collector run
// every few hundred sends (quic-go's GSO batches are ~5 KiB each).
// It holds arrays, whose pointers a slice converts to and from without
// an allocation (a *[]byte would be allocated anew at each Put).
var payloadPool = sync.Pool{New: func() any { return new([maxDatagram]byte) }}

// getPayloadBuf returns a buffer of n bytes, from the pool if pooled (not
// for sendmmsg, whose messages all hold theirs at once: a pooled buffer
// each would be 64 KiB each).
func getPayloadBuf(n int, pooled bool) []byte {
	if n > maxDatagram || !pooled {
		return make([]byte, n)
	}
	return payloadPool.Get().(*[maxDatagram]byte)[:n]
}

// putPayloadBuf recycles b once nothing refers to it any more.
func putPayloadBuf(b []byte) {
	if cap(b) == maxDatagram {
		payloadPool.Put((*[maxDatagram]byte)(b[:maxDatagram]))
	}
}
