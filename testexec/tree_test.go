package testexec

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

func TestHasSetting(t *testing.T) {
	for _, c := range []struct {
		v    string
		want bool
	}{
		{"nettrapcfg=abc", true},
		{"x=1,nettrapcfg=abc", true},
		{"nettrapcfg=abc,x=1", true},
		{"x=1, nettrapcfg=abc", true},
		{"x=1", false},
		{"", false},
		{"nettrapcfg=abcd", false},
		{"nettrapcfg=ab", false},
		{"xnettrapcfg=abc", false},
	} {
		if got := HasSetting(c.v, "nettrapcfg=abc"); got != c.want {
			t.Errorf("HasSetting(%q) = %v, want %v", c.v, got, c.want)
		}
	}
}

func TestGodebug(t *testing.T) {
	if v, ok := Godebug([]string{"A=1", "GODEBUG=x=1", "GODEBUG=y=2"}); !ok || v != "x=1" {
		t.Errorf("Godebug = %q, %v; want the first one, x=1", v, ok)
	}
	if v, ok := Godebug([]string{"A=1", "GODEBUGX=1"}); ok {
		t.Errorf("Godebug = %q, %v; want none", v, ok)
	}
	if v, ok := Godebug([]string{"GODEBUG="}); !ok || v != "" {
		t.Errorf("Godebug = %q, %v; want an empty one", v, ok)
	}
}

func TestGoSubcommand(t *testing.T) {
	for argv, want := range map[string][]string{
		"test":  {"go", "test", "./..."},
		"vet":   {"go", "vet", "test"},
		"build": {"/usr/bin/go", "-C", "test", "build"},
		"run":   {"go", "-C=dir", "run", "."},
		"":      {"go"},
	} {
		if got := GoSubcommand(want); got != argv {
			t.Errorf("GoSubcommand(%q) = %q, want %q", want, got, argv)
		}
	}
}

func TestHasTestlog(t *testing.T) {
	for _, c := range []struct {
		argv []string
		want bool
	}{
		{[]string{"x.test", "-test.testlogfile=/w/b001/testlog.txt", "-test.v=true"}, true},
		{[]string{"x.test", "--test.testlogfile=/w/b001/testlog.txt"}, true},
		{[]string{"x.test", "-test.v=true"}, false},
		{[]string{"x.test", "-args", "-test.testlogfile=/x"}, false},
		{[]string{"x.test"}, false},
	} {
		if got := HasTestlog(c.argv); got != c.want {
			t.Errorf("HasTestlog(%q) = %v, want %v", c.argv, got, c.want)
		}
	}
}

// TestIsGoCommand: the go command by its name, through a symlink, and a
// renamed copy by its build information; other programs are not.
func TestIsGoCommand(t *testing.T) {
	goExe, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command in PATH")
	}
	goExe, _ = filepath.EvalSymlinks(goExe)
	dir := t.TempDir()
	link := filepath.Join(dir, "gotool")
	if err := os.Symlink(goExe, link); err != nil {
		t.Fatal(err)
	}
	renamed := filepath.Join(dir, "mygo")
	data, err := os.ReadFile(goExe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(renamed, data, 0o755); err != nil {
		t.Fatal(err)
	}
	self, _ := os.Executable()
	for path, want := range map[string]bool{
		goExe:                         true,
		link:                          true,
		renamed:                       true,
		self:                          false, // a Go program, not cmd/go
		"/bin/sh":                     false,
		filepath.Join(dir, "missing"): false,
	} {
		if got := IsGoCommand(path); got != want {
			t.Errorf("IsGoCommand(%s) = %v, want %v", path, got, want)
		}
	}
	if IsGoProcess(os.Getpid()) {
		t.Error("IsGoProcess(this test) = true")
	}
}
