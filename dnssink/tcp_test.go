package dnssink

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"testing/iotest"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

func frame(msg []byte) []byte {
	return append(binary.BigEndian.AppendUint16(nil, uint16(len(msg))), msg...)
}

func writeFrame(t *testing.T, c net.Conn, msg []byte) {
	t.Helper()
	if _, err := c.Write(frame(msg)); err != nil {
		t.Fatal(err)
	}
}

// readFrameT reads one framed answer and returns its header.
func readFrameT(t *testing.T, c net.Conn) dnsmessage.Header {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(time.Minute)) // a safety net, not an assertion
	var buf []byte
	msg, _, err := readFrame(c, &buf)
	if err != nil {
		t.Fatalf("reading a framed answer: %v", err)
	}
	var p dnsmessage.Parser
	h, err := p.Start(msg)
	if err != nil {
		t.Fatalf("answer: %v", err)
	}
	return h
}

// expectEOF waits until the sink closes c.
func expectEOF(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(time.Minute)) // a safety net, not an assertion
	n, err := c.Read(make([]byte, 1))
	var ne net.Error
	if n != 0 || err == nil || (errors.As(err, &ne) && ne.Timeout()) {
		t.Fatalf("read = %d, %v; want the sink to close the connection", n, err)
	}
}

func TestReadFrameOneByteAtATime(t *testing.T) {
	q1 := query(t, 1, "a.example.", dnsmessage.TypeA)
	q2 := query(t, 2, "b.example.", dnsmessage.TypeAAAA)
	r := iotest.OneByteReader(bytes.NewReader(append(frame(q1), frame(q2)...)))
	var buf []byte
	for _, want := range [][]byte{q1, q2} {
		msg, n, err := readFrame(r, &buf)
		if err != nil || !bytes.Equal(msg, want) || n != len(want)+2 {
			t.Fatalf("readFrame = %x, %d, %v; want %x", msg, n, err, want)
		}
	}
	if _, n, err := readFrame(r, &buf); err != io.EOF || n != 0 {
		t.Errorf("at the end: %d, %v; want 0, EOF", n, err)
	}
	for _, cut := range [][]byte{{0}, {0, 9, 1, 2}} {
		if _, n, err := readFrame(bytes.NewReader(cut), &buf); err != io.ErrUnexpectedEOF || n != len(cut) {
			t.Errorf("cut frame %x: %d, %v; want %d, unexpected EOF", cut, n, err, len(cut))
		}
	}
}

func TestTCPFraming(t *testing.T) {
	rec := &recorder{}
	s := startSink(t, Config{}, rec)
	c := dialSink(t, s, "tcp", false)
	s.Expect("tcp", localAddr(c), rec.handle)

	// Several queries in one write, a zero-length frame among them, and a
	// frame holding more than the message: answers come in order, none
	// for the empty frame.
	var batch []byte
	batch = append(batch, frame(query(t, 1, "one.example.", dnsmessage.TypeA))...)
	batch = append(batch, frame(nil)...)
	batch = append(batch, frame(append(query(t, 2, "two.example.", dnsmessage.TypeTXT), "extra"...))...)
	if _, err := c.Write(batch); err != nil {
		t.Fatal(err)
	}
	for _, id := range []uint16{1, 2} {
		if h := readFrameT(t, c); h.ID != id || h.RCode != dnsmessage.RCodeRefused {
			t.Errorf("answer %+v, want REFUSED to %d", h, id)
		}
	}
	// A query written a byte at a time.
	for _, b := range frame(query(t, 3, "three.example.", dnsmessage.TypeSRV)) {
		if _, err := c.Write([]byte{b}); err != nil {
			t.Fatal(err)
		}
	}
	if h := readFrameT(t, c); h.ID != 3 {
		t.Errorf("answer %+v, want 3", h)
	}
	// A frame promising more than it brings, then the client stops
	// writing: reported cut short, connection closed.
	partial := query(t, 4, "four.example.", dnsmessage.TypeA)
	c.Write(append(binary.BigEndian.AppendUint16(nil, uint16(len(partial)+100)), partial...))
	c.(*net.TCPConn).CloseWrite()
	expectEOF(t, c)

	got := rec.queries()
	want := []struct {
		name string
		err  error
	}{{"one.example", nil}, {"", ErrShort}, {"two.example", nil}, {"three.example", nil}, {"four.example", ErrShort}}
	if len(got) != len(want) {
		t.Fatalf("handler saw %d queries, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		if got[i].Name != w.name || !errors.Is(got[i].Err, w.err) || (w.err == nil) != (got[i].Err == nil) {
			t.Errorf("query %d = %+v, want %q with error %v", i, got[i], w.name, w.err)
		}
	}
	if len(rec.strayed()) != 0 {
		t.Errorf("strays: %+v", rec.strayed())
	}
}

func TestTCPIdleClosed(t *testing.T) {
	rec := &recorder{}
	s := startSink(t, Config{IdleTimeout: 50 * time.Millisecond}, rec)
	// Silent: closed without a report.
	silent := dialSink(t, s, "tcp", false)
	expectEOF(t, silent)
	// Trickling: a length prefix and part of the message, then nothing.
	slow := dialSink(t, s, "tcp", false)
	msg := query(t, 7, "slow.example.", dnsmessage.TypeA)
	slow.Write(frame(msg)[:5])
	expectEOF(t, slow)
	got := rec.strayed()
	if len(got) != 1 || !errors.Is(got[0].q.Err, ErrShort) || got[0].from != localAddr(slow) {
		t.Errorf("strays %+v, want one cut-short report from %v", got, localAddr(slow))
	}
}

func TestTCPConnLimit(t *testing.T) {
	rec := &recorder{}
	s := startSink(t, Config{MaxConns: 2}, rec)
	var held []net.Conn
	for i := range 2 {
		c := dialSink(t, s, "tcp", false)
		writeFrame(t, c, query(t, uint16(i), "held.example.", dnsmessage.TypeA))
		readFrameT(t, c) // handshake: the sink is serving c
		held = append(held, c)
	}
	extra := dialSink(t, s, "tcp", false)
	extra.Write(frame(query(t, 9, "extra.example.", dnsmessage.TypeA)))
	expectEOF(t, extra)
	for i, c := range held {
		writeFrame(t, c, query(t, uint16(10+i), "again.example.", dnsmessage.TypeA))
		if h := readFrameT(t, c); h.ID != uint16(10+i) {
			t.Errorf("held connection %d: answer %+v", i, h)
		}
	}
	for _, q := range rec.strayed() {
		if q.q.Name == "extra.example" {
			t.Errorf("a connection over the limit was served")
		}
	}
}
