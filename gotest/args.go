package gotest

import (
	"debug/buildinfo"
	"os/exec"
	"regexp"
	"strings"

	"github.com/nettrap/nettrap/teststream"
)

// testVFlag matches the verbosity flag however the go command or a person
// spells it: -test.v, --test.v, -test.v=true, -test.v=test2json.
var testVFlag = regexp.MustCompile(`^--?test\.v(=.*)?$`)

// IsTestBinary tells whether argv runs a Go test binary. Only those get
// -test.v=test2json and attribution; any other program, even one named
// *.test or given -test.* arguments, runs as it is. A binary built by the
// go command carries its build info, whose main path ends in ".test" for a
// test binary (`go test -c`, or the binary `go test -exec` hands over).
func IsTestBinary(argv []string) bool {
	if len(argv) == 0 {
		return false
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return false
	}
	bi, err := buildinfo.ReadFile(path)
	return err == nil && strings.HasSuffix(bi.Path, ".test")
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
