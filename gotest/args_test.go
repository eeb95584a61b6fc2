package gotest

import (
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/nettrap/nettrap/teststream"
)

// TestIsTestBinary: only a Go test binary's build info makes one.
func TestIsTestBinary(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	sh := filepath.Join(t.TempDir(), "script.test")
	os.WriteFile(sh, []byte("#!/bin/sh\necho hi\n"), 0o755)
	tests := []struct {
		argv []string
		want bool
	}{
		{[]string{os.Args[0], "-test.paniconexit0", "-test.timeout=10m0s"}, true}, // this very test binary
		{[]string{os.Args[0]}, true},
		{[]string{goCmd, "-test.v=true"}, false}, // a Go program, not a test binary
		{[]string{sh, "-test.v"}, false},         // named *.test, not Go
		{[]string{"sh", "-c", "echo -test.v"}, false},
		{[]string{"/no/such/thing.test"}, false},
		{nil, false},
	}
	for _, tt := range tests {
		if _, got := TestPackage(tt.argv); got != tt.want {
			t.Errorf("TestPackage(%q) is a test binary: %v, want %v", tt.argv, got, tt.want)
		}
	}
}

// TestRewrite: the user's arguments come after -test.v=test2json, in
// order and untouched when no -test.v of theirs is certainly in effect
// (and theirs is not -test.v=test2json in front: TestRewriteOnce).
func TestRewrite(t *testing.T) {
	for _, args := range [][]string{
		nil,
		{"-test.run", "TestFail"},
		{"-name", "x y", "-update", "--", "-test.v=true", "pos"},
		{"pos1", "-test.v"},
		{"-", "--", "---", "-=x", "-test.v=bogus"},
		{"-test.v=bogus"},
		{"-test.v=1"}, // chattyFlag takes true, false and test2json only
		{"-test.v=t"},
		{"-test.v=TRUE"},
		{"-name", "-test.v"},                  // the value of -name, or a flag
		{"-update", "-test.v=false"},          // likewise
		{"-update", "x", "-test.v"},           // after a positional x, or not
		{"-test.run", "-test.v"},              // the value of -test.run
		{"-test.v", "-name", "-test.v=false"}, // the last, or a value
		{"-test.v", "-name", "x", "-test.v"},  // the last, or a positional's neighbour
		{"-test.v", "-test.short=maybe"},
		{"-test.v", "-test.run"},
		{"-test.v", "---x"},
		{"-h", "-test.v"},      // the usage, unless the package defines -h
		{"-help=1", "-test.v"}, // the same with a value
		{"-test.v", "-h=x", "-test.v=false"},
		{"--", "-test.v"},
		{"pos", "-test.v=true"},
	} {
		argv := append([]string{"p.test"}, args...)
		got := Rewrite(argv).Argv
		want := append([]string{"p.test", "-test.v=test2json"}, args...)
		if !slices.Equal(got, want) {
			t.Errorf("Rewrite(%q).Argv = %q, want %q", argv, got, want)
		}
	}
}

// TestRewriteReplaces: the user's -test.v that is certainly in effect is
// replaced by -test.v=test2json, and no other word; nothing is added.
func TestRewriteReplaces(t *testing.T) {
	const j = "-test.v=test2json"
	for _, tt := range []struct {
		args []string
		at   int // the index in args of the replaced token
	}{
		{[]string{"-test.v"}, 0},
		{[]string{"--test.v"}, 0},
		{[]string{"-test.v=true"}, 0},
		{[]string{"--test.v=true"}, 0},
		{[]string{"-test.v=false"}, 0},
		{[]string{"--test.v=false"}, 0},
		{[]string{"-test.count", "2", "-test.v"}, 2},
		{[]string{"-test.run", "X", "-test.v", "-test.count=1"}, 2},
		// The go command's canonical prefix (go test -v -exec).
		{[]string{"-test.paniconexit0", "-test.timeout=10m0s", "-test.v=true"}, 2},
		{[]string{"-test.paniconexit0", "-test.timeout=10m0s", "-test.count=1", "-test.v=true", "-update", "-name", "x"}, 3},
		// Duplicates: only the last, in effect, is replaced.
		{[]string{"-test.v", "-test.v=false"}, 1},
		{[]string{"-test.v=false", "-test.run", "X", "-test.v"}, 3},
		{[]string{"-test.v=test2json", "-test.v"}, 1},
		// Known arity before: bool flags take no next word.
		{[]string{"-test.short", "-test.v"}, 1},
		{[]string{"-test.failfast", "-test.v=true"}, 1},
		{[]string{"-test.short=false", "-test.v"}, 1},
		// A flag of the package written -name=value consumes nothing.
		{[]string{"-name=x", "-update=true", "-test.v"}, 2},
		{[]string{"-name=-test.v", "-test.v=false"}, 1},
		// Words that cannot set -test.v again after it.
		{[]string{"-test.v", "--", "-test.v=false"}, 0},
		{[]string{"-test.v", "pos", "-test.v=false"}, 0},
		{[]string{"-test.v", "-update"}, 0},
		{[]string{"-test.v", "-update", "x", "-name", "y"}, 0},
		{[]string{"-test.v", "-name", "-test.run=X"}, 0},
		{[]string{"-test.v", "-h"}, 0},
		{[]string{"-test.v", "-name", "-test.v=bogus"}, 0}, // the value of -name, or the binary fails
		{[]string{"-test.run", "-test.v", "-test.v"}, 2},
		// Values of testing flags are not checked here: the binary fails
		// on x after it has parsed -test.v, whatever its value.
		{[]string{"-test.v", "-test.count", "x"}, 0},
	} {
		argv := append([]string{"p.test"}, tt.args...)
		want := slices.Concat([]string{"p.test"}, tt.args)
		want[1+tt.at] = j
		if got := Rewrite(argv).Argv; !slices.Equal(got, want) {
			t.Errorf("Rewrite(%q).Argv = %q, want %q", argv, got, want)
		}
	}
}

// TestRewriteOnce: the test binary gets -test.v=test2json once where
// nothing else asks for it more, as go test runs it (go test -json gives
// it; -v gives -test.v=true, which becomes it): never nettrap's in front
// of the user's own in effect, nor in front of the same word.
func TestRewriteOnce(t *testing.T) {
	const j = "-test.v=test2json"
	goPrefix := []string{"-test.paniconexit0", "-test.timeout=10m0s"}
	for _, tt := range []struct {
		args, want []string
	}{
		// go test -exec nettrap, and nettrap -- go test (wrapped): the
		// go command's arguments for the binary.
		{goPrefix, slices.Concat([]string{j}, goPrefix)},
		{slices.Concat(goPrefix, []string{"-test.v=true"}), slices.Concat(goPrefix, []string{j})},
		{slices.Concat(goPrefix, []string{j}), slices.Concat(goPrefix, []string{j})},
		{slices.Concat(goPrefix, []string{"-test.count=1", j, "-test.run=^TestX$"}), slices.Concat(goPrefix, []string{"-test.count=1", j, "-test.run=^TestX$"})},
		{slices.Concat(goPrefix, []string{"-test.v=true", "-update"}), slices.Concat(goPrefix, []string{j, "-update"})},
		// The user's own, certainly in effect, kept as written.
		{[]string{j}, []string{j}},
		{[]string{"--test.v=test2json"}, []string{"--test.v=test2json"}},
		{[]string{"-test.v", j}, []string{"-test.v", j}},
		// Not certainly in effect, but in front already: nothing added.
		{[]string{j, "-name", "-test.v"}, []string{j, "-name", "-test.v"}},
		{[]string{"--test.v=test2json", "-update", "x", "-test.v"}, []string{"--test.v=test2json", "-update", "x", "-test.v"}},
		// Not in effect for certain, not in front: nettrap's in front.
		{[]string{"-name", j}, []string{j, "-name", j}},
		{[]string{"-name", "-test.v"}, []string{j, "-name", "-test.v"}},
		{nil, []string{j}},
	} {
		argv := append([]string{"p.test"}, tt.args...)
		want := append([]string{"p.test"}, tt.want...)
		if got := Rewrite(argv).Argv; !slices.Equal(got, want) {
			t.Errorf("Rewrite(%q).Argv = %q, want %q", argv, got, want)
		}
		if !slices.Equal(argv[1:], tt.args) {
			t.Errorf("Rewrite changed its argument: %q, was %q", argv[1:], tt.args)
		}
	}
}

// TestRewriteMode: the mode for a framed stream, and whether the stream
// may come without the marker.
func TestRewriteMode(t *testing.T) {
	const (
		quiet   = teststream.ModeQuiet
		verbose = teststream.ModeVerbose
		json    = teststream.ModeJSONFramed
		marked  = teststream.FramingMarked
		any     = teststream.FramingAny
	)
	tests := []struct {
		args    []string
		mode    teststream.Mode
		framing teststream.Framing
	}{
		{nil, quiet, marked},
		{[]string{"-test.paniconexit0", "-test.timeout=10m0s"}, quiet, marked},
		{[]string{"-test.v=test2json", "-test.run", "X"}, json, marked},
		{[]string{"--test.v=test2json"}, json, marked},
		// A -test.v certainly in effect: replaced, its mode rendered.
		{[]string{"-test.v"}, verbose, marked},
		{[]string{"-test.v=true", "-test.run=^TestX$"}, verbose, marked},
		{[]string{"-test.v=false"}, quiet, marked},
		{[]string{"-test.v", "-test.v=test2json"}, json, marked}, // last wins
		{[]string{"-test.v=test2json", "-test.v"}, verbose, marked},
		{[]string{"-test.v", "-test.v=false"}, quiet, marked},
		{[]string{"-test.paniconexit0", "-test.timeout=10m0s", "-test.v=true", "-update"}, verbose, marked},
		{[]string{"-test.v=1"}, quiet, marked}, // not a value -test.v takes: the usage, exit 2
		// After "--" or the first positional argument, nothing is a flag.
		{[]string{"--", "-test.v=test2json"}, quiet, marked},
		{[]string{"pos", "-test.v"}, quiet, marked},
		{[]string{"-test.run", "-test.v"}, quiet, marked}, // the value of -test.run
		{[]string{"-test.count", "2", "-test.v=test2json"}, json, marked},
		{[]string{"-test.short", "-test.v=test2json"}, json, marked},
		{[]string{"-test.short=false", "-test.v=test2json"}, json, marked},
		{[]string{"-test.short=maybe", "-test.v"}, quiet, marked}, // invalid: exit 2
		{[]string{"-test.run"}, quiet, marked},                    // missing value: exit 2
		// A flag of the package: arity unknown.
		{[]string{"-name", "-test.v"}, quiet, any},                  // value or flag: either
		{[]string{"-update", "-test.v=test2json"}, json, marked},    // likely a flag
		{[]string{"-name", "x", "-test.v=test2json"}, json, marked}, // likely a value before it
		{[]string{"-name=x", "-test.v=test2json"}, json, marked},    // certainly
		{[]string{"-name=x", "-test.v"}, verbose, marked},           // certainly
		{[]string{"-name", "-test.v=test2json"}, json, marked},      // likely the flag
		{[]string{"-update", "x", "-test.v"}, quiet, any},           // x may be positional
		{[]string{"-test.v", "-name", "-test.v=false"}, quiet, any}, // either may win
		{[]string{"-h", "-test.v=test2json"}, quiet, marked},        // usage, unless the package has -h
		{[]string{"-help", "-test.v=true"}, quiet, any},
	}
	for _, tt := range tests {
		p := Rewrite(append([]string{"p.test"}, tt.args...))
		if p.Mode != tt.mode || p.Framing != tt.framing {
			t.Errorf("Rewrite(%q): mode %v, framing %v; want %v, %v", tt.args, p.Mode, p.Framing, tt.mode, tt.framing)
		}
	}
}

func TestVerbosity(t *testing.T) {
	tests := []struct {
		args     []string
		likely   verb
		possible []verb
	}{
		{nil, verbNone, []verb{verbNone}},
		{[]string{"-test.v"}, verbTrue, []verb{verbTrue}},
		{[]string{"-test.v=true", "-test.v=false"}, verbFalse, []verb{verbFalse}},
		{[]string{"--test.v=test2json"}, verbJSON, []verb{verbJSON}},
		{[]string{"---test.v"}, verbError, []verb{verbError}},
		{[]string{"-=x"}, verbError, []verb{verbError}},
		{[]string{"-", "-test.v"}, verbNone, []verb{verbNone}},
		{[]string{"-test.bench", ".", "-test.run", "^$", "-test.v"}, verbTrue, []verb{verbTrue}},
		{[]string{"-name", "-test.v"}, verbTrue, []verb{verbTrue, verbNone}},
		{[]string{"-name", "x y", "-test.v"}, verbTrue, []verb{verbTrue, verbNone}},
		{[]string{"-a", "-b", "-test.v=false"}, verbFalse, []verb{verbFalse, verbNone}},
		{[]string{"-a=1", "-b=2", "-test.v=false"}, verbFalse, []verb{verbFalse}},
		{[]string{"-h"}, verbError, []verb{verbError, verbNone}},
	}
	for _, tt := range tests {
		likely, possible := verbosity(tt.args)
		want := map[verb]bool{}
		for _, v := range tt.possible {
			want[v] = true
		}
		if likely != tt.likely || !maps.Equal(possible, want) {
			t.Errorf("verbosity(%q) = %v, %v; want %v, %v", tt.args, likely, possible, tt.likely, want)
		}
	}
}

// TestVerbosityLong: every reading of many flags of unknown arity is
// considered without trying them one by one.
func TestVerbosityLong(t *testing.T) {
	var args []string
	for range 10000 {
		args = append(args, "-x")
	}
	args = append(args, "-test.v=false")
	likely, possible := verbosity(args)
	if likely != verbFalse || !possible[verbFalse] || !possible[verbNone] || len(possible) != 2 {
		t.Errorf("verbosity = %v, %v", likely, possible)
	}
}

// TestTestPackage: the package is the binary's own, from whatever directory;
// a program without a test binary's build info is not one.
func TestTestPackage(t *testing.T) {
	for _, dir := range []string{"/", t.TempDir()} {
		t.Chdir(dir)
		if got, ok := TestPackage([]string{os.Args[0]}); !ok || got != "github.com/nettrap/nettrap/gotest" {
			t.Errorf("TestPackage(this binary) from %q = %q, %v", dir, got, ok)
		}
	}
	sh := filepath.Join(t.TempDir(), "loose.test")
	os.WriteFile(sh, []byte("#!/bin/sh\n"), 0o755)
	if got, ok := TestPackage([]string{sh}); ok {
		t.Errorf("TestPackage(script named *.test) = %q, true; want not a test binary", got)
	}
}
