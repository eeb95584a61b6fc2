package teststream

import (
	"bytes"
	"strconv"
)

// Log is the first line of a log message as the testing package frames
// it in a test's output (t.Log, t.Logf, t.Error, t.Skip…): four spaces,
// the file and line of the call, ": ", the message's first line.
//
//	"    prices_test.go:12: nettrap:network\n"
//
// Go 1.20 to 1.26 print it so in every mode that prints logs as they
// come (-test.v=test2json and -test.v=true): the indent is four spaces
// at any subtest depth, the message's further lines get eight, and
// File is the file's base name, or its full path under -test.fullpath
// (Go 1.21+), "???" when unknown.
type Log struct {
	File string
	Line int
	Msg  string
}

// LogLine reads an output event as the first line of a log message: a
// whole line (not a piece of a longer one) in the frame Log describes.
// Which test logged it is the event's Test, the test the stream's
// framing attributes the line to, as test2json does; the frame itself
// can be printed by anyone (fmt.Print of the same bytes), so the
// caller decides what to trust it for.
func LogLine(e *Event) (Log, bool) {
	if e.Kind != KindOutput || !e.LineStart || !e.LineEnd {
		return Log{}, false
	}
	b, ok := bytes.CutPrefix(trimEOL(e.Raw), []byte("    "))
	if !ok || len(b) == 0 || b[0] == ' ' {
		return Log{}, false
	}
	// The first ":N: " ends the location: a file name with one in it
	// is not read right, and no such file is a Go source file.
	for i := bytes.IndexByte(b, ':'); i > 0; {
		j := i + 1
		for j < len(b) && '0' <= b[j] && b[j] <= '9' {
			j++
		}
		if j > i+1 && bytes.HasPrefix(b[j:], []byte(": ")) {
			n, err := strconv.Atoi(string(b[i+1 : j]))
			if err != nil {
				return Log{}, false
			}
			return Log{File: string(b[:i]), Line: n, Msg: string(b[j+2:])}, true
		}
		k := bytes.IndexByte(b[i+1:], ':')
		if k < 0 {
			break
		}
		i += 1 + k
	}
	return Log{}, false
}
