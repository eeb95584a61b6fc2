package gotest

import "strconv"

// FailFast reports whether a test binary run with args (its arguments,
// without the program) runs with -test.failfast on, as its flag parsing
// would see it: the likely reading of the flags (see verbosity), the last
// -test.failfast winning; false when that reading ends in the binary's own
// error or usage, since then no test runs.
func FailFast(args []string) bool {
	on := false
	end := walkLikely(args, func(word string) {
		if name, value, hasValue := flagWord(word); name == "test.failfast" {
			b, err := strconv.ParseBool(value)
			on = !hasValue || (err == nil && b)
		}
	})
	return on && end != verbError
}
