package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/nettrap/nettrap/supervisor"
)

// TestStartProfile: with the switch set, nettrap writes a CPU profile (a
// gzipped protobuf, as runtime/pprof writes it); without it, nothing; a
// path that cannot be created costs the run nothing.
func TestStartProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpu.pprof")
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == supervisor.CPUProfileEnv {
				return v
			}
			return ""
		}
	}
	startProfile(env(""))()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("a profile without the switch: %v", err)
	}
	startProfile(env(path))()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte{0x1f, 0x8b}) {
		t.Errorf("the profile is no gzip stream: % x", b[:min(len(b), 8)])
	}
	startProfile(env(filepath.Join(t.TempDir(), "missing", "cpu.pprof")))()
}
