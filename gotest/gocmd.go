package gotest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/nettrap/nettrap/procfs"
)

// This file is what nettrap knows of the go command itself: where "test"
// is in its arguments, its -exec flag (on the command line and in
// GOFLAGS), and the flags that make go test run no test binary.

// TestIndex returns the index of "test" in `go [-C dir] test …`, or -1
// when args is not a go test command.
func TestIndex(args []string) int {
	if len(args) < 2 || filepath.Base(args[0]) != "go" {
		return -1
	}
	i := 1
	// -C is the only flag the go command takes before the subcommand.
	switch {
	case args[i] == "-C" || args[i] == "--C":
		i += 2
	case strings.HasPrefix(args[i], "-C=") || strings.HasPrefix(args[i], "--C="):
		i++
	}
	if i < len(args) && args[i] == "test" {
		return i
	}
	return -1
}

// WithExec is the go test command args (TestIndex i) with execArg right
// after "test", in front of the user's flags.
func WithExec(args []string, i int, execArg string) []string {
	out := make([]string, 0, len(args)+1)
	out = append(append(out, args[:i+1]...), execArg)
	return append(out, args[i+1:]...)
}

// isExecFlag: arg sets go test's -exec.
func isExecFlag(arg string) bool {
	name, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(arg, "-"), "-"), "=")
	return strings.HasPrefix(arg, "-") && name == "exec"
}

// UserExec finds an -exec the user gave (on the command line, up to
// -args, or in GOFLAGS): nettrap must be the -exec program, and the go
// command would silently keep only one of them.
func UserExec(testArgs []string, goflags string) string {
	for _, a := range testArgs {
		if a == "-args" || a == "--args" {
			break
		}
		if isExecFlag(a) {
			return a
		}
	}
	for _, f := range strings.Fields(goflags) {
		if isExecFlag(strings.Trim(f, `'"`)) {
			return "GOFLAGS=" + goflags
		}
	}
	return ""
}

// ExecFlag is the -exec flag naming the program self. The go command
// splits the value into words with shell-like quoting, so a path with
// spaces is quoted.
func ExecFlag(self string) (string, error) {
	if strings.ContainsAny(self, `'"\`) {
		return "", fmt.Errorf("the path of nettrap %q holds a quote or backslash, which go test -exec cannot take", self)
	}
	if strings.ContainsAny(self, " \t\n") {
		self = "'" + self + "'"
	}
	return "-exec=" + self, nil
}

// GoflagsWithExec adds -exec=self to the user's GOFLAGS, unless they name
// an -exec of their own (which then wins: its test binaries are confined
// all the same, attributed by process).
func GoflagsWithExec(goflags, self string) (string, error) {
	if UserExec(nil, goflags) != "" {
		return goflags, nil
	}
	// GOFLAGS is split at spaces, with no quoting.
	if strings.ContainsAny(self, " \t\n'\"\\") {
		return "", fmt.Errorf("the path of nettrap %q holds a space or quote, which GOFLAGS cannot carry", self)
	}
	return strings.TrimSpace(goflags + " -exec=" + self), nil
}

// goValueFlags are the go test flags (build and test) that take a value,
// so that `-run -c` is read as -run's pattern, not as -c.
var goValueFlags = set(
	"asmflags", "buildmode", "buildvcs", "compiler", "gccgoflags", "gcflags",
	"installsuffix", "ldflags", "mod", "modfile", "overlay", "p", "pgo",
	"pkgdir", "tags", "toolexec", "covermode", "coverpkg", "o", "exec", "vet",
	"bench", "benchtime", "blockprofile", "blockprofilerate", "count",
	"coverprofile", "cpu", "cpuprofile", "fuzz", "fuzzcachedir",
	"fuzzminimizetime", "fuzztime", "list", "memprofile", "memprofilerate",
	"mutexprofile", "mutexprofilefraction", "outputdir", "parallel", "run",
	"shuffle", "skip", "testlogfile", "timeout", "trace")

// RunsNothing: the go test arguments (after "test") ask only to build or
// print, never to run a test binary: -c (compile to pkg.test) or -n (print
// the commands).
func RunsNothing(testArgs []string) bool {
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

// ParentIsGo: this process was started by the go command (as go test
// -exec).
func ParentIsGo() bool {
	exe, err := procfs.Exe(os.Getppid())
	return err == nil && filepath.Base(exe) == "go"
}
