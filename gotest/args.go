package gotest

import (
	"os"
	"os/exec"
	"slices"

	"github.com/nettrap/nettrap/teststream"
)

// TestPackage tells whether argv runs a Go test binary and names the
// package it tests (see ReadBinary). Only test binaries get
// -test.v=test2json and attribution; any other program, even one named
// *.test or given -test.* arguments, runs as it is, whatever directory
// the binary runs in.
func TestPackage(argv []string) (pkg string, ok bool) {
	if len(argv) == 0 {
		return "", false
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return "", false
	}
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	return ReadBinary(f)
}

// Plan is how nettrap runs a test binary and reads its output.
type Plan struct {
	// Argv is the command: argv[0], -test.v=test2json, then every argument
	// of the user, in order, unchanged; or, when the user's own -test.v is
	// certainly the one in effect, argv[0] and the user's arguments with
	// that one set to -test.v=test2json (see Rewrite). -test.v=test2json
	// is never added where the user's arguments have it already.
	Argv []string
	// Mode is what to write if the binary prints the framed stream: the
	// stream as it is if the user asked for -test.v=test2json, what the
	// binary prints with -test.v=true if the user's -test.v=true was
	// replaced, else what the binary prints without -test.v.
	Mode teststream.Mode
	// Framing is FramingMarked when the arguments certainly leave
	// -test.v=test2json in effect, and FramingAny when the user's own
	// -test.v may turn it into -test.v=true or false: then the binary
	// prints its output without the marker, as the user asked, and it is
	// read that way and written as it is.
	Framing teststream.Framing
}

// Rewrite returns how to run the test binary argv.
//
// The flag package gives every flag the value of its last occurrence, and
// a flag in front of all others with its value after '=' consumes no
// other argument. So -test.v=test2json right after argv[0] turns on the
// framing that attribution reads, changes the meaning of no argument of
// the user's (whatever flags the test's package defines, whatever their
// arity, "--" and positional arguments included), and leaves the user's
// own -test.v, if any, in effect.
//
// When the user's -test.v that takes effect is known for certain (see
// certainV), it is replaced by -test.v=test2json instead (kept if it is
// that already: go test -json gives it), nothing is added, and the output is
// rendered back in the mode it asked for (-test.v=true: ModeVerbose;
// -test.v=false: ModeQuiet): the same flag with another of its values
// changes nothing but the framing, and the framed stream tells exactly
// which test runs (with plain -v a subtest's report comes after its
// parent's, and -test.v=false names no test). Otherwise which output the
// user asked for is found by parsing the arguments as the testing package
// does (see verbosity), and the user's arguments are left as they are.
func Rewrite(argv []string) Plan {
	if i, v, ok := certainV(argv[1:]); ok {
		out := slices.Clone(argv)
		if v != verbJSON {
			out[1+i] = "-test.v=test2json"
		}
		mode := map[verb]teststream.Mode{verbTrue: teststream.ModeVerbose,
			verbFalse: teststream.ModeQuiet, verbJSON: teststream.ModeJSONFramed}[v]
		return Plan{Argv: out, Mode: mode, Framing: teststream.FramingMarked}
	}
	out := slices.Clone(argv)
	if len(argv) < 2 || !isFramingFlag(argv[1]) {
		out = slices.Concat(argv[:1], []string{"-test.v=test2json"}, argv[1:])
	}
	likely, possible := verbosity(argv[1:])
	p := Plan{Argv: out, Mode: teststream.ModeQuiet, Framing: teststream.FramingMarked}
	for v := range possible {
		if v == verbTrue || v == verbFalse {
			p.Framing = teststream.FramingAny
		}
	}
	// Framed output means the binary ended with -test.v=test2json: the
	// user gave it, or gave no -test.v at all (nettrap's is in effect).
	switch {
	case likely == verbJSON:
		p.Mode = teststream.ModeJSONFramed
	case likely == verbNone:
	case possible[verbJSON] && !possible[verbNone]:
		p.Mode = teststream.ModeJSONFramed
	}
	return p
}

// isFramingFlag: a is -test.v=test2json (one dash or two), which as the
// first argument turns on the framing as nettrap's own would.
func isFramingFlag(a string) bool {
	return a == "-test.v=test2json" || a == "--test.v=test2json"
}
