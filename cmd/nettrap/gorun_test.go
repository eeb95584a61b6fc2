package main

import (
	"slices"
	"strings"
	"testing"
)

func TestGoTestIndex(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{"go", "test", "./..."}, 1},
		{[]string{"/usr/local/go/bin/go", "test"}, 1},
		{[]string{"go", "-C", "sub", "test", "-v"}, 3},
		{[]string{"go", "-C=sub", "test"}, 2},
		{[]string{"go", "build", "./..."}, -1},
		{[]string{"go", "vet", "test"}, -1},
		{[]string{"gofmt", "test"}, -1},
		{[]string{"make", "test"}, -1},
		{[]string{"go"}, -1},
		{[]string{"go", "-C"}, -1},
	} {
		if got := goTestIndex(tc.args); got != tc.want {
			t.Errorf("goTestIndex(%q) = %d, want %d", tc.args, got, tc.want)
		}
	}
}

func TestUserExec(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		goflags string
		found   bool
	}{
		{[]string{"-v", "./..."}, "", false},
		{[]string{"-exec", "x", "./..."}, "", true},
		{[]string{"--exec=x"}, "", true},
		{[]string{"-executor"}, "", false},
		{[]string{"./...", "-args", "-exec", "x"}, "", false}, // the test's own flag
		{nil, "-mod=mod -exec=x", true},
		{nil, "'-exec=x y'", true},
		{nil, "-mod=mod -count=1", false},
	} {
		if got := userExec(tc.args, tc.goflags) != ""; got != tc.found {
			t.Errorf("userExec(%q, %q) found=%v, want %v", tc.args, tc.goflags, got, tc.found)
		}
	}
}

func TestExecFlag(t *testing.T) {
	if got, _ := execFlag("/usr/bin/nettrap"); got != "-exec=/usr/bin/nettrap" {
		t.Errorf("plain path: %q", got)
	}
	if got, _ := execFlag("/opt/my tools/nettrap"); got != "-exec='/opt/my tools/nettrap'" {
		t.Errorf("path with a space: %q", got)
	}
	if _, err := execFlag(`/opt/it's/nettrap`); err == nil {
		t.Error("a path with a quote was accepted")
	}
}

// The flags of the run reach every -exec nettrap through NETTRAP_*
// variables, and parse back to the same configuration.
func TestInnerEnvRoundTrip(t *testing.T) {
	outer, err := parseConfig([]string{"--mode=audit", "--allow", "192.0.2.0/24:443", "--allow", "198.51.100.7/32",
		"--allow-test", "^TestA$", "--allow-test", "Test(B|C), x", "--errno", "EACCES", "--allow-unspecified", "--", "go", "test"}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	outer.runID = "run1"
	env := innerEnv([]string{"PATH=/bin", "NETTRAP_MODE=enforce", "NETTRAP_GENERIC=1", "NETTRAP_SUMMARY=off"}, outer, "/tmp/a.jsonl", "/tmp/run", "/etc/resolv.conf")
	if !slices.Contains(env, "PATH=/bin") || slices.Contains(env, "NETTRAP_MODE=enforce") || slices.Contains(env, "NETTRAP_GENERIC=1") ||
		slices.Contains(env, "NETTRAP_SUMMARY=off") || !slices.Contains(env, innerMark+"=/tmp/run") {
		t.Errorf("env %q: want PATH kept, the user's NETTRAP_* replaced, no summary, the inner mark", env)
	}
	get := func(k string) string {
		for _, kv := range env {
			if v, ok := strings.CutPrefix(kv, k+"="); ok {
				return v
			}
		}
		return ""
	}
	inner, err := parseConfig([]string{"/tmp/x.test", "-test.v"}, get)
	if err != nil {
		t.Fatal(err)
	}
	if inner.mode != outer.mode || inner.errno != outer.errno || inner.auditLog != "/tmp/a.jsonl" || inner.runID != "run1" || !inner.allowUnspecified ||
		!slices.Equal(inner.raw.allow, outer.raw.allow) || !slices.Equal(inner.raw.allowTests, outer.raw.allowTests) {
		t.Errorf("inner config %+v\ndiffers from outer %+v", inner, outer)
	}
}
