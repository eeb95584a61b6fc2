package teststream

import (
	"bytes"
	"testing"
)

// FuzzPassthrough checks that any input, cut anywhere, comes out of a
// ModeJSONFramed renderer unchanged, that the events' Raw bytes add up to the
// input, and that the other modes do not panic.
func FuzzPassthrough(f *testing.F) {
	for _, sc := range scenarios {
		in := readGolden(f, sc.name, ModeJSONFramed)
		f.Add(in[:min(len(in), 2000)], uint8(7), uint8(64))
	}
	f.Add([]byte("\x16=== RUN   T\nx\x16\x16--- PASS: T (\n\x16PASS"), uint8(1), uint8(8))
	f.Fuzz(func(t *testing.T, in []byte, chunk, size uint8) {
		n := max(int(chunk), 1)
		sz := max(int(size), 8)
		raw, out := passChunks(in, n, sz, ModeJSONFramed, FramingMarked)
		if !bytes.Equal(raw, in) {
			t.Fatalf("Raw bytes %q != input %q", raw, in)
		}
		if !bytes.Equal(out, in) {
			t.Fatalf("JSON mode output %q != input %q", out, in)
		}
		for _, m := range []Mode{ModeVerbose, ModeQuiet} {
			renderAll(in, m, sz, 0)
		}
	})
}

// passChunks feeds in, cut every n bytes, to a parser with line buffer sz
// in framing f, rendering in mode m. It returns the events' Raw bytes and
// the rendered output.
func passChunks(in []byte, n, sz int, m Mode, f Framing) (raw, out []byte) {
	var rawBuf, outBuf bytes.Buffer
	r := NewRenderer(&outBuf, m)
	p := newParser(func(e *Event) {
		rawBuf.Write(e.Raw)
		r.Handle(e)
	}, sz)
	p.framing = f
	for i := 0; i < len(in); i += n {
		p.Write(bytes.Clone(in[i:min(i+n, len(in))]))
	}
	p.Close()
	r.Close()
	return rawBuf.Bytes(), outBuf.Bytes()
}
