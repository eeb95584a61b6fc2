package gotest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadBinary(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	goBin, _ = filepath.EvalSymlinks(goBin)
	marker := filepath.Join(t.TempDir(), "marker.test")
	if err := os.WriteFile(marker, []byte("#!/bin/sh\n"+testMainFunc+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, path string
		pkg        string
		ok         bool
	}{
		{"this test binary", os.Args[0], "github.com/nettrap/nettrap/gotest", true},
		{"a Go program that is no test binary", goBin, "", false},
		{"a script naming testing.(*M).Run", marker, "", false},
		{"not a Go program", "/bin/sh", "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, err := os.Open(c.path)
			if err != nil {
				t.Skip(err)
			}
			defer f.Close()
			pkg, ok := ReadBinary(f)
			if pkg != c.pkg || ok != c.ok {
				t.Errorf("ReadBinary(%s) = %q, %v; want %q, %v", c.path, pkg, ok, c.pkg, c.ok)
			}
		})
	}
}

// TestContainsInAcrossWindows: a name that straddles two read windows is
// found.
func TestContainsInAcrossWindows(t *testing.T) {
	for _, at := range []int{0, 1<<20 - 5, 1 << 20, 3<<20 - 1} {
		b := bytes.Repeat([]byte{'x'}, 3<<20+64)
		copy(b[at:], testMainFunc)
		if !containsIn(bytes.NewReader(b), testMainFunc) {
			t.Errorf("not found at %d", at)
		}
	}
	if containsIn(strings.NewReader(strings.Repeat("y", 2<<20)), testMainFunc) {
		t.Error("found in a file without it")
	}
}
