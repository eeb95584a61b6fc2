package gotest

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/nettrap/nettrap/teststream"
)

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
		if got := IsTestBinary(tt.argv); got != tt.want {
			t.Errorf("IsTestBinary(%q) = %v, want %v", tt.argv, got, tt.want)
		}
	}
}

func TestRewrite(t *testing.T) {
	tests := []struct {
		in   []string
		out  []string
		mode teststream.Mode
	}{
		{[]string{"p.test", "-test.paniconexit0", "-test.timeout=10m0s"},
			[]string{"p.test", "-test.paniconexit0", "-test.timeout=10m0s", "-test.v=test2json"}, teststream.ModeQuiet},
		{[]string{"p.test", "-test.v=true", "-test.run=^TestX$"},
			[]string{"p.test", "-test.run=^TestX$", "-test.v=test2json"}, teststream.ModeVerbose},
		{[]string{"p.test", "-test.v"}, []string{"p.test", "-test.v=test2json"}, teststream.ModeVerbose},
		{[]string{"p.test", "--test.v=test2json"}, []string{"p.test", "-test.v=test2json"}, teststream.ModeJSONFramed},
		{[]string{"p.test", "-test.v=false"}, []string{"p.test", "-test.v=test2json"}, teststream.ModeQuiet},
		// Arguments after the flags belong to the test: left alone.
		{[]string{"p.test", "-test.v=true", "--", "-test.v=true"},
			[]string{"p.test", "-test.v=test2json", "--", "-test.v=true"}, teststream.ModeVerbose},
		{[]string{"p.test", "arg", "-test.v"}, []string{"p.test", "-test.v=test2json", "arg", "-test.v"}, teststream.ModeQuiet},
	}
	for _, tt := range tests {
		out, mode := Rewrite(tt.in)
		if !slices.Equal(out, tt.out) || mode != tt.mode {
			t.Errorf("Rewrite(%q) = %q, %v; want %q, %v", tt.in, out, mode, tt.out, tt.mode)
		}
	}
}

func TestImportPath(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "go.mod"), []byte("module example.com/m\n\ngo 1.26\n"), 0o644)
	sub := filepath.Join(root, "a", "b")
	os.MkdirAll(sub, 0o755)
	if got := ImportPath(sub, "/tmp/x/b.test"); got != "example.com/m/a/b" {
		t.Errorf("ImportPath(sub) = %q", got)
	}
	if got := ImportPath(root, "/tmp/x/m.test"); got != "example.com/m" {
		t.Errorf("ImportPath(root) = %q", got)
	}
	if got := ImportPath(t.TempDir(), "/tmp/x/loose.test"); got != "loose" {
		t.Errorf("ImportPath(no module) = %q", got)
	}
}

func TestParentName(t *testing.T) {
	for in, want := range map[string]string{"TestA": "", "TestA/sub": "TestA", "TestA/sub/deep": "TestA/sub"} {
		if got := parentName(in); got != want {
			t.Errorf("parentName(%q) = %q, want %q", in, got, want)
		}
	}
}
