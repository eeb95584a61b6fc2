package gotest

import (
	"strconv"
	"strings"
)

// boolTestFlags are the testing package's boolean flags: without "=" they
// take no value from the next argument.
var boolTestFlags = map[string]bool{
	"test.artifacts": true, "test.benchmem": true, "test.failfast": true, "test.fullpath": true,
	"test.fuzzworker": true, "test.paniconexit0": true, "test.short": true, "test.v": true,
}

// FailFast reports whether a test binary run with args (its arguments,
// without the program) runs with -test.failfast on, as its flag parsing
// would see it: -test.failfast or --test.failfast, with =true/=false or
// any value strconv.ParseBool takes; the last one wins; parsing stops at
// "--" or at the first argument that is not a flag. A flag of the test's
// own (unknown here) is taken to take the next argument as its value
// unless that looks like a flag.
func FailFast(args []string) bool {
	on := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || len(a) < 2 || a[0] != '-' {
			break
		}
		name := strings.TrimPrefix(a[1:], "-")
		if name == "" || name[0] == '-' || name[0] == '=' {
			break // the flag package stops here with an error
		}
		name, value, hasValue := strings.Cut(name, "=")
		switch {
		case name == "test.failfast" && hasValue:
			if b, err := strconv.ParseBool(value); err == nil {
				on = b
			} else {
				return false // the binary refuses to run
			}
		case name == "test.failfast":
			on = true
		case hasValue || boolTestFlags[name]:
		case strings.HasPrefix(name, "test."):
			i++ // a testing flag with its value
		case i+1 < len(args) && !strings.HasPrefix(args[i+1], "-"):
			i++ // the test's own flag, with its value
		}
	}
	return on
}
