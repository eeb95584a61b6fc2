package teststream

import (
	"bytes"
	"unicode"
	"unicode/utf8"
)

// marker is the byte with which `-test.v=test2json` introduces every framing
// line (testing.marker, ^V).
const marker = byte(0x16)

// maxLine bounds the bytes buffered for one line. Framing lines must fit in it
// (test2json makes the same assumption, with the same size); longer lines are
// passed on in pieces so that a test printing megabytes without a newline
// cannot make us buffer without bound.
const maxLine = 4096

// splitter turns arbitrary chunks into whole lines and, for over-long lines,
// pieces. A line ends after '\n' or just before a marker byte that does not
// begin a line: the testing package writes the marker only at the start of
// framing lines, so a marker in mid-line means the previous output lacked its
// newline.
type splitter struct {
	buf  []byte
	mid  bool                     // inside a long line already passed on in pieces
	line func(b []byte)           // a whole line
	part func(b []byte, end bool) // a piece of a long line; end: the line ends here
}

func newSplitter(size int, line func([]byte), part func([]byte, bool)) *splitter {
	return &splitter{buf: make([]byte, 0, size), line: line, part: part}
}

func (s *splitter) write(b []byte) {
	for len(b) > 0 {
		m := copy(s.buf[len(s.buf):cap(s.buf)], b)
		s.buf = s.buf[:len(s.buf)+m]
		b = b[m:]
		i := s.lines()
		if i == 0 && len(s.buf) == cap(s.buf) {
			// The whole buffer is one fragment: pass it on, keeping an
			// incomplete UTF-8 sequence for the next piece.
			t := trimUTF8(s.buf)
			s.part(s.buf[:t], false)
			s.buf = s.buf[:copy(s.buf, s.buf[t:])]
			s.mid = true
		}
		if i > 0 {
			s.buf = s.buf[:copy(s.buf, s.buf[i:])]
		}
	}
}

// lines hands on every complete line in s.buf and returns how many bytes it
// consumed.
func (s *splitter) lines() int {
	i := 0
	for i < len(s.buf) {
		j := indexEOL(s.buf[i:])
		if j < 0 {
			if !s.mid {
				if n := s.benchPrefix(s.buf[i:]); n > 0 {
					i += n
					continue
				}
			}
			break
		}
		e := i + j
		if s.mid {
			s.part(s.buf[i:e], true)
			s.mid = false
		} else {
			s.line(s.buf[i:e])
		}
		i = e
	}
	return i
}

// benchPrefix passes on "BenchmarkName-8 \t" at once: the result follows
// only when the benchmark has finished, and the name should be seen while it
// runs (test2json does the same).
func (s *splitter) benchPrefix(b []byte) int {
	j := bytes.IndexByte(b, '\t')
	if j < 0 || !isBenchmarkName(bytes.TrimRight(b[:j], " ")) {
		return 0
	}
	s.part(b[:j+1], false)
	s.mid = true
	return j + 1
}

// flush hands on what is left: a last line without newline.
func (s *splitter) flush() {
	if len(s.buf) == 0 {
		return
	}
	if s.mid {
		s.part(s.buf, true)
	} else {
		s.line(s.buf)
	}
	s.buf = s.buf[:0]
	s.mid = false
}

// indexEOL returns the length of the first line in b (including its '\n'),
// or -1 if b holds no complete line.
func indexEOL(b []byte) int {
	for i, c := range b {
		if c == '\n' {
			return i + 1
		}
		if c == marker && i > 0 {
			return i
		}
	}
	return -1
}

func isBenchmarkName(b []byte) bool {
	const prefix = "Benchmark"
	if !bytes.HasPrefix(b, []byte(prefix)) {
		return false
	}
	if len(b) == len(prefix) {
		return true
	}
	r, _ := utf8.DecodeRune(b[len(prefix):])
	return !unicode.IsLower(r)
}

// trimUTF8 returns the largest t <= len(b) such that b[:t] does not end in
// the middle of a possibly valid UTF-8 sequence.
func trimUTF8(b []byte) int {
	for i := 1; i < utf8.UTFMax && i <= len(b); i++ {
		c := b[len(b)-i]
		if c&0xc0 == 0x80 {
			continue
		}
		switch {
		case c&0xe0 == 0xc0 && i < 2, c&0xf0 == 0xe0 && i < 3, c&0xf8 == 0xf0 && i < 4:
			return len(b) - i
		}
		break
	}
	return len(b)
}
