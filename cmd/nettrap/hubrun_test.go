package main

import (
	"slices"
	"testing"
)

func TestGoflagsWithExec(t *testing.T) {
	for _, tc := range []struct {
		goflags, self, want string
		bad                 bool
	}{
		{"", "/usr/bin/nettrap", "-exec=/usr/bin/nettrap", false},
		{"-count=1 -v", "/usr/bin/nettrap", "-count=1 -v -exec=/usr/bin/nettrap", false},
		// The user's own -exec wins: those binaries stay confined, by process.
		{"-exec=/usr/bin/other -v", "/usr/bin/nettrap", "-exec=/usr/bin/other -v", false},
		{"--exec=x", "/usr/bin/nettrap", "--exec=x", false},
		{"", "/opt/my tools/nettrap", "", true},
		{"", `/opt/it's/nettrap`, "", true},
	} {
		got, err := goflagsWithExec(tc.goflags, tc.self)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("goflagsWithExec(%q, %q) = %q, %v; want %q (error %v)", tc.goflags, tc.self, got, err, tc.want, tc.bad)
		}
	}
}

func TestWithoutVar(t *testing.T) {
	env := []string{"A=1", "GOFLAGS=-v", "GOFLAGSX=2", "B=GOFLAGS=3"}
	got := withoutVar(env, "GOFLAGS")
	if want := []string{"A=1", "GOFLAGSX=2", "B=GOFLAGS=3"}; !slices.Equal(got, want) {
		t.Errorf("withoutVar = %q, want %q", got, want)
	}
	if env[1] != "GOFLAGS=-v" {
		t.Error("withoutVar changed its input")
	}
}
