package gotest

import (
	"strconv"
	"strings"
)

// verb is the value of -test.v a test binary ends up with.
type verb int

const (
	verbNone  verb = iota // no -test.v among the user's arguments
	verbTrue              // -test.v, -test.v=true: verbose, unmarked
	verbFalse             // -test.v=false: quiet
	verbJSON              // -test.v=test2json: the framed stream
	verbError             // flag.Parse fails or shows the usage: no test runs
)

// The flags of the testing package (Go 1.26, src/testing/*.go): their
// arity is known. -test.v is a bool flag that also takes "test2json".
var (
	testBoolFlags = set("test.benchmem", "test.fuzzworker", "test.short", "test.failfast",
		"test.artifacts", "test.paniconexit0", "test.fullpath")
	testValueFlags = set("test.bench", "test.benchtime", "test.fuzz", "test.fuzztime",
		"test.fuzzminimizetime", "test.fuzzcachedir", "test.outputdir", "test.count",
		"test.coverprofile", "test.gocoverdir", "test.list", "test.run", "test.skip",
		"test.memprofile", "test.memprofilerate", "test.cpuprofile", "test.blockprofile",
		"test.blockprofilerate", "test.mutexprofile", "test.mutexprofilefraction",
		"test.trace", "test.timeout", "test.cpu", "test.parallel", "test.testlogfile",
		"test.shuffle")
)

func set(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// pstate is a point in the parse: the next argument and -test.v so far.
type pstate struct {
	i int
	v verb
}

// verbosity parses args (without argv[0]) as the flag package does and
// returns the -test.v the binary ends up with. The arity of a flag the
// test's own package defines is not known: one written without '=' may
// take the next argument as its value or not. likely takes it when that
// argument does not start with '-' (as a person reads `-name x` and
// `-update -test.v`); possible holds the outcome of every reading.
func verbosity(args []string) (likely verb, possible map[verb]bool) {
	possible = map[verb]bool{}
	likely = walkLikely(args, func(string) {})
	seen := map[pstate]bool{{}: true}
	queue := []pstate{{}}
	for len(queue) > 0 {
		var s pstate
		s, queue = queue[0], queue[1:]
		next, end, done := step(args, s)
		if done {
			possible[end] = true
			continue
		}
		for _, n := range next {
			if !seen[n] {
				seen[n] = true
				queue = append(queue, n)
			}
		}
	}
	return likely, possible
}

// walkLikely follows the likely reading of args (see verbosity), calls
// flag with every word read as a flag, in order, and returns how the
// parse ends.
func walkLikely(args []string, flag func(word string)) verb {
	s := pstate{}
	for {
		next, end, done := step(args, s)
		if done {
			return end
		}
		flag(args[s.i])
		s = next[0]
	}
}

// flagWord splits a word read as a flag into its name and value:
// "--test.v=true" is test.v, true, true.
func flagWord(a string) (name, value string, hasValue bool) {
	name = strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
	return strings.Cut(name, "=")
}

// step parses the argument at s.i. It returns the states the parse may
// go on from, the likely one first, or done and the outcome.
func step(args []string, s pstate) (next []pstate, end verb, done bool) {
	if s.i >= len(args) {
		return nil, s.v, true
	}
	a := args[s.i]
	if len(a) < 2 || a[0] != '-' {
		return nil, s.v, true // the first positional argument
	}
	name := a[1:]
	if a[1] == '-' {
		if len(a) == 2 {
			return nil, s.v, true // "--"
		}
		name = a[2:]
	}
	if name[0] == '-' || name[0] == '=' {
		return nil, verbError, true // bad flag syntax
	}
	name, value, hasValue := strings.Cut(name, "=")
	after := pstate{s.i + 1, s.v}
	switch {
	case name == "test.v":
		if !hasValue {
			value = "true"
		}
		switch value {
		case "true":
			after.v = verbTrue
		case "false":
			after.v = verbFalse
		case "test2json":
			after.v = verbJSON
		default:
			return nil, verbError, true
		}
		return []pstate{after}, 0, false
	case testBoolFlags[name]:
		if _, err := strconv.ParseBool(value); hasValue && err != nil {
			return nil, verbError, true
		}
		return []pstate{after}, 0, false
	case testValueFlags[name]:
		if !hasValue {
			if after.i >= len(args) {
				return nil, verbError, true
			}
			after.i++
		}
		return []pstate{after}, 0, false
	}
	// A flag of the package under test, or -h, -help: the usage, unless
	// the package defines it. The value of an invalid one is not checked.
	next = []pstate{after}
	if !hasValue && after.i < len(args) {
		takes := pstate{after.i + 1, s.v}
		if w := args[after.i]; len(w) < 2 || w[0] != '-' {
			next = []pstate{takes, after}
		} else {
			next = append(next, takes)
		}
	}
	if name == "h" || name == "help" {
		usage := pstate{len(args), verbError} // ends the parse with verbError
		next = append([]pstate{usage}, next...)
	}
	return next, 0, false
}
