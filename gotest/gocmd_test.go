package gotest

import (
	"slices"
	"testing"
)

func TestTestIndex(t *testing.T) {
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
		if got := TestIndex(tc.args); got != tc.want {
			t.Errorf("TestIndex(%q) = %d, want %d", tc.args, got, tc.want)
		}
	}
}

func TestWithExec(t *testing.T) {
	args := []string{"go", "-C", "sub", "test", "-v", "./..."}
	got := WithExec(args, 3, "-exec=/bin/nettrap")
	want := []string{"go", "-C", "sub", "test", "-exec=/bin/nettrap", "-v", "./..."}
	if !slices.Equal(got, want) {
		t.Errorf("WithExec = %q, want %q", got, want)
	}
	if args[4] != "-v" {
		t.Error("WithExec changed its input")
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
		if got := UserExec(tc.args, tc.goflags) != ""; got != tc.found {
			t.Errorf("UserExec(%q, %q) found=%v, want %v", tc.args, tc.goflags, got, tc.found)
		}
	}
}

func TestExecFlag(t *testing.T) {
	if got, _ := ExecFlag("/usr/bin/nettrap"); got != "-exec=/usr/bin/nettrap" {
		t.Errorf("plain path: %q", got)
	}
	if got, _ := ExecFlag("/opt/my tools/nettrap"); got != "-exec='/opt/my tools/nettrap'" {
		t.Errorf("path with a space: %q", got)
	}
	if _, err := ExecFlag(`/opt/it's/nettrap`); err == nil {
		t.Error("a path with a quote was accepted")
	}
}

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
		got, err := GoflagsWithExec(tc.goflags, tc.self)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("GoflagsWithExec(%q, %q) = %q, %v; want %q (error %v)", tc.goflags, tc.self, got, err, tc.want, tc.bad)
		}
	}
}

func TestRunsNothing(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{[]string{"-c", "./pkg"}, true},
		{[]string{"./pkg", "-c", "-o", "x.test"}, true},
		{[]string{"--c=true"}, true},
		{[]string{"-n", "./..."}, true},
		{[]string{"-c=false", "./..."}, false},
		{[]string{"./..."}, false},
		{[]string{"-run", "-c", "./..."}, false}, // -run's pattern
		{[]string{"-count=1", "-v"}, false},
		{[]string{"./pkg", "-args", "-c"}, false}, // the test binary's own
	} {
		if got := RunsNothing(tc.args); got != tc.want {
			t.Errorf("RunsNothing(%q) = %v, want %v", tc.args, got, tc.want)
		}
	}
}
