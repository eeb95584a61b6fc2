package netsem

import (
	"embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

//go:embed csrc/*.c csrc/*.h
var csrc embed.FS

// Tell is the line that differs by design: where a blocked connect waits.
const Tell = "tell"

var (
	once     sync.Once
	dir, bin string
	buildErr error
)

// Build compiles netsem (once per test binary) into a directory every
// user can read and returns its path. Without gcc t skips, or fails when
// CI=true.
func Build(t testing.TB) string {
	t.Helper()
	once.Do(func() { bin, buildErr = build() })
	if buildErr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("netsem: %v (CI=true, so this is fatal)", buildErr)
		}
		t.Skipf("netsem: %v", buildErr)
	}
	return bin
}

// Cleanup removes the program; call it after m.Run.
func Cleanup() {
	if dir != "" {
		os.RemoveAll(dir)
	}
}

func build() (string, error) {
	var err error
	if dir, err = os.MkdirTemp("", "nettrap-netsem-"); err != nil {
		return "", err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return "", err
	}
	files, err := csrc.ReadDir("csrc")
	if err != nil {
		return "", err
	}
	args := []string{"-O1", "-Wall", "-Werror", "-pthread", "-o", filepath.Join(dir, "netsem")}
	for _, f := range files {
		code, err := csrc.ReadFile("csrc/" + f.Name())
		if err != nil {
			return "", err
		}
		p := filepath.Join(dir, f.Name())
		if err := os.WriteFile(p, code, 0o644); err != nil {
			return "", err
		}
		if strings.HasSuffix(p, ".c") {
			args = append(args, p)
		}
	}
	if out, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("gcc %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return filepath.Join(dir, "netsem"), nil
}

// Lines splits netsem's output into its result lines by name, in order.
// A name printed twice is an error.
func Lines(out string) (names []string, results map[string]string, err error) {
	results = map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		name, res, ok := strings.Cut(l, ": ")
		if !ok {
			return nil, nil, fmt.Errorf("not a result line: %q", l)
		}
		if _, dup := results[name]; dup {
			return nil, nil, fmt.Errorf("%s printed twice", name)
		}
		names = append(names, name)
		results[name] = res
	}
	return names, results, nil
}
