package gotest

import (
	"path/filepath"
	"regexp"
	"strings"

	"github.com/nettrap/nettrap/teststream"
)

// testVFlag matches the verbosity flag however the go command or a person
// spells it: -test.v, --test.v, -test.v=true, -test.v=test2json.
var testVFlag = regexp.MustCompile(`^--?test\.v(=.*)?$`)

// IsTestBinary tells whether argv runs a Go test binary: `go test -exec`
// always passes -test.* flags (at least -test.paniconexit0 and
// -test.timeout), and `go test -c` names binaries *.test.
func IsTestBinary(argv []string) bool {
	if len(argv) == 0 {
		return false
	}
	if strings.HasSuffix(filepath.Base(argv[0]), ".test") {
		return true
	}
	for _, a := range argv[1:] {
		if strings.HasPrefix(a, "-test.") || strings.HasPrefix(a, "--test.") {
			return true
		}
	}
	return false
}

// Rewrite returns argv with the verbosity set to -test.v=test2json, the
// framing nettrap reads, and the output mode the caller asked for, which
// nettrap renders back. Flags after a "--" or the first non-flag argument
// belong to the test itself and are left alone.
func Rewrite(argv []string) ([]string, teststream.Mode) {
	mode := teststream.ModeQuiet
	out := []string{argv[0]}
	rest := argv[1:]
	for i, a := range rest {
		if a == "--" || !strings.HasPrefix(a, "-") {
			out = append(out, "-test.v=test2json")
			return append(out, rest[i:]...), mode
		}
		if !testVFlag.MatchString(a) {
			out = append(out, a)
			continue
		}
		_, v, hasValue := strings.Cut(a, "=")
		switch {
		case !hasValue || v == "true" || v == "1" || v == "t" || v == "T" || v == "TRUE" || v == "True":
			mode = teststream.ModeVerbose
		case v == "test2json":
			mode = teststream.ModeJSONFramed
		default:
			mode = teststream.ModeQuiet
		}
	}
	return append(out, "-test.v=test2json"), mode
}
