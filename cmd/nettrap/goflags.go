package main

import (
	"strconv"
	"strings"
)

// goValueFlags are the go test flags (build and test) that take a value,
// so that `-run -c` is read as -run's pattern, not as -c.
var goValueFlags = map[string]bool{
	"asmflags": true, "buildmode": true, "buildvcs": true, "compiler": true,
	"gccgoflags": true, "gcflags": true, "installsuffix": true, "ldflags": true,
	"mod": true, "modfile": true, "overlay": true, "p": true, "pgo": true,
	"pkgdir": true, "tags": true, "toolexec": true, "covermode": true,
	"coverpkg": true, "o": true, "exec": true, "vet": true,
	"bench": true, "benchtime": true, "blockprofile": true, "blockprofilerate": true,
	"count": true, "coverprofile": true, "cpu": true, "cpuprofile": true,
	"fuzz": true, "fuzzcachedir": true, "fuzzminimizetime": true, "fuzztime": true,
	"list": true, "memprofile": true, "memprofilerate": true, "mutexprofile": true,
	"mutexprofilefraction": true, "outputdir": true, "parallel": true, "run": true,
	"shuffle": true, "skip": true, "testlogfile": true, "timeout": true, "trace": true,
}

// runsNothing: the go test arguments (after "test") ask only to build or
// print, never to run a test binary: -c (compile to pkg.test) or -n (print
// the commands). Such a run gets no audit log and no summary.
func runsNothing(testArgs []string) bool {
	for i := 0; i < len(testArgs); i++ {
		a := testArgs[i]
		if a == "-args" || a == "--args" {
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			continue // a package
		}
		name, val, hasVal := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-"), "=")
		switch {
		case name == "c" || name == "n":
			if !hasVal {
				return true
			}
			if b, err := strconv.ParseBool(val); err == nil && b {
				return true
			}
		case goValueFlags[name] && !hasVal:
			i++ // its value
		}
	}
	return false
}
