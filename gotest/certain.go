package gotest

import "strings"

// certainV finds the user's -test.v token that certainly decides the
// binary's -test.v, if there is one: its index in args (the arguments
// without argv[0]) and its value.
//
// Certain means that every word before the token parses one way only
// (a flag of the testing package, whose arity is known, or a -name=value
// form), so the token is certainly the -test.v flag and not a flag's value
// or a positional argument; that its value is one the testing package
// takes (true, false, test2json), so the binary accepts it; and that no
// word after it can be a -test.v flag in any reading of the flags of
// unknown arity that follow, so it is the last one, the one in effect. A
// parse that certainly fails before the end (bad syntax, a missing or
// invalid value of a testing flag) reports false: the binary's own error
// is kept exactly as it is.
//
// Replacing that token by -test.v=test2json changes nothing but the
// framing of the output: the same flag gets another of its values.
func certainV(args []string) (idx int, v verb, ok bool) {
	idx = -1
	s := pstate{}
	for {
		next, end, done := step(args, s)
		switch {
		case done && end == verbError:
			return -1, 0, false
		case done:
			return idx, s.v, idx >= 0
		case len(next) > 1:
			// A flag of unknown arity: what follows is not certain, but
			// the token found is in effect if no reading of the rest
			// sets -test.v again (or every reading that does fails).
			if idx < 0 {
				return -1, 0, false
			}
			_, rest := verbosity(args[s.i:])
			for r := range rest {
				if r != verbNone && r != verbError {
					return -1, 0, false
				}
			}
			return idx, s.v, true
		}
		if isVFlag(args[s.i]) {
			idx = s.i
		}
		s = next[0]
	}
}

// isVFlag reports whether a, read as a flag, is -test.v (with or without a
// value, one dash or two).
func isVFlag(a string) bool {
	name, _, _ := flagWord(a)
	return name == "test.v" && strings.HasPrefix(a, "-")
}
