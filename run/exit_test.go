package run

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestLookCommand(t *testing.T) {
	dir := t.TempDir()
	noexec := filepath.Join(dir, "nettrap-test-noexec")
	os.WriteFile(noexec, []byte("#!/bin/sh\n"), 0o644)
	t.Setenv("PATH", dir+":/usr/bin:/bin")
	for _, tc := range []struct {
		name string
		want int
	}{
		{"sh", 0},
		{"/bin/sh", 0},
		{"nettrap-test-no-such-command", ExitNotFound},
		{"/nonexistent/cmd", ExitNotFound},
		{noexec, ExitCannotExec},
		{"nettrap-test-noexec", ExitCannotExec},
		{dir, ExitCannotExec},
	} {
		if got, err := lookCommand(tc.name); got != tc.want {
			t.Errorf("lookCommand(%q) = %d (%v), want %d", tc.name, got, err, tc.want)
		}
	}
}

// The status travels in the error: none for 0, the command's without a
// message, nettrap's with one.
func TestExitErrors(t *testing.T) {
	if exit(0) != nil {
		t.Error("exit(0) is an error")
	}
	var e *ExitError
	if err := exit(3); !errors.As(err, &e) || e.Code != 3 || e.Err != nil {
		t.Errorf("exit(3) = %#v", err)
	}
	err := cantRun("bad %s", "thing")
	if !errors.As(err, &e) || e.Code != ExitCantRun || err.Error() != "bad thing" {
		t.Errorf("cantRun = %#v", err)
	}
}

func TestWithoutVar(t *testing.T) {
	env := []string{"A=1", "GOFLAGS=-v", "GOFLAGSX=2", "B=GOFLAGS=3"}
	got := withoutVar(env, "GOFLAGS")
	if want := []string{"A=1", "GOFLAGSX=2", "B=GOFLAGS=3"}; len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("withoutVar = %q, want %q", got, want)
	}
	if env[1] != "GOFLAGS=-v" {
		t.Error("withoutVar changed its input")
	}
}

// A wait status as a shell reports it: the code, or 128+signal (the
// ptrace engine hands the status over as a wait status).
func TestStatusCode(t *testing.T) {
	for _, tc := range []struct {
		ws   syscall.WaitStatus
		want int
	}{
		{0, 0},
		{3 << 8, 3},
		{255 << 8, 255},
		{syscall.WaitStatus(syscall.SIGTERM), 128 + 15},
		{syscall.WaitStatus(syscall.SIGKILL) | 0x80, 128 + 9}, // with a core dump
	} {
		if got := statusCode(tc.ws); got != tc.want {
			t.Errorf("statusCode(%#x) = %d, want %d", uint32(tc.ws), got, tc.want)
		}
	}
}
