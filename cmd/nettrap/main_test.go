package main

import (
	"errors"
	"os"
	"testing"

	"github.com/nettrap/nettrap/run"
)

// The kind of run follows from the command, --generic, and the hub an
// outer nettrap set. (Test binaries are told by their build info, which
// the binary of a package main test lacks: the integration tests run
// those.)
func TestKind(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		hub  string
		want run.Kind
		pkg  string
	}{
		{[]string{"--", "go", "test", "./..."}, "", run.GoTest, ""},
		{[]string{"--generic", "--", "go", "test", "./..."}, "", run.Generic, ""},
		{[]string{"--generic", "--", self}, "", run.Generic, ""},
		{[]string{"--", "make", "test"}, "", run.Command, ""},
		{[]string{"--", "go", "-C", "x", "test"}, "/tmp/hub", run.InnerGoTest, ""},
		{[]string{"--generic", "--", self}, "/tmp/hub", run.InnerCommand, ""},
		{[]string{"--", "make"}, "/tmp/hub", run.InnerCommand, ""},
	} {
		cfg, err := parseConfig(tc.args, env("NETTRAP_HUB", tc.hub))
		if err != nil {
			t.Fatal(err)
		}
		o := cfg.options()
		if o.Kind != tc.want || o.Package != tc.pkg || o.Hub != tc.hub {
			t.Errorf("%q with hub %q: kind %v, package %q, hub %q; want %v, %q", tc.args, tc.hub, o.Kind, o.Package, o.Hub, tc.want, tc.pkg)
		}
	}
}

// The exit status travels in the error; a plain error is nettrap's own.
func TestExitCode(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want int
	}{
		{nil, 0},
		{&run.ExitError{Code: 3}, 3},
		{&run.ExitError{Code: 127, Err: errors.New("x: command not found")}, 127},
		{errors.New("something"), run.ExitCantRun},
		{cantRun("bad %s", "flag"), run.ExitCantRun},
	} {
		if got := exitCode(tc.err, []string{"--", "true"}); got != tc.want {
			t.Errorf("exitCode(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}

func TestTestArgv(t *testing.T) {
	for _, tc := range []struct{ args, want []string }{
		{[]string{"--mode=audit", "--", "x.test", "-v"}, []string{"x.test", "-v"}},
		{[]string{"--sealed", "x.test"}, []string{"x.test"}},
		{[]string{"--help"}, nil},
	} {
		got := testArgv(tc.args)
		if len(got) != len(tc.want) || (len(got) > 0 && got[0] != tc.want[0]) {
			t.Errorf("testArgv(%q) = %q, want %q", tc.args, got, tc.want)
		}
	}
}
