package dnssink

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// serveTCP accepts connections until the listener is closed.
func (s *Sink) serveTCP(l *net.TCPListener) {
	defer s.wg.Done()
	var delay time.Duration
	for {
		c, err := l.AcceptTCP()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			// EMFILE and the like: back off rather than spin, as net/http does.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			select {
			case <-s.done:
				return
			case <-time.After(delay):
			}
			continue
		}
		delay = 0
		if !s.track(c) {
			c.Close()
			continue
		}
		s.wg.Add(1)
		go s.serveConn(c)
	}
}

// track registers c so that Close can close it; it refuses c when the sink
// is closing or already holds MaxConns connections.
func (s *Sink) track(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.done:
		return false
	default:
	}
	if len(s.conns) >= s.cfg.MaxConns {
		return false
	}
	s.conns[c] = struct{}{}
	return true
}

func (s *Sink) untrack(c net.Conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	c.Close()
}

// serveConn answers length-prefixed messages (RFC 1035 4.2.2), any number
// per connection, until the client closes, sends something that is not a
// whole frame, or takes longer than IdleTimeout over one exchange.
func (s *Sink) serveConn(c *net.TCPConn) {
	defer s.wg.Done()
	defer s.untrack(c)
	from := c.RemoteAddr().(*net.TCPAddr).AddrPort()
	buf := make([]byte, 0, minEchoLimit)
	for {
		// One deadline per exchange, not per read: a client trickling a
		// byte at a time cannot hold the connection for longer.
		c.SetDeadline(time.Now().Add(s.cfg.IdleTimeout))
		msg, n, err := readFrame(c, &buf)
		if err != nil {
			if n > 0 && !s.closing() {
				q, _ := Parse(msg)
				q.Err = fmt.Errorf("%w: tcp message cut short after %d bytes: %w", ErrShort, n, err)
				s.report("tcp", from, q)
			}
			return
		}
		q, _ := Parse(msg)
		s.report("tcp", from, q)
		resp := Refused(msg)
		if resp == nil {
			continue
		}
		out := binary.BigEndian.AppendUint16(make([]byte, 0, 2+len(resp)), uint16(len(resp)))
		if _, err := c.Write(append(out, resp...)); err != nil {
			return
		}
	}
}

// readFrame reads one length-prefixed message into *buf. n counts the bytes
// read, telling a connection that ended between messages (n == 0) from one
// cut short.
func readFrame(r io.Reader, buf *[]byte) (msg []byte, n int, err error) {
	var lb [2]byte
	if n, err = io.ReadFull(r, lb[:]); err != nil {
		return nil, n, err
	}
	size := int(binary.BigEndian.Uint16(lb[:]))
	if cap(*buf) < size {
		*buf = make([]byte, size)
	}
	m, err := io.ReadFull(r, (*buf)[:size])
	return (*buf)[:m], n + m, err
}

func (s *Sink) closing() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}
