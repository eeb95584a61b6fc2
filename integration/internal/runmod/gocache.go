package runmod

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// A build cache of its own, warm.
//
// The cache tests give every go command a build cache of its own
// (GOCACHE), so that no test result cached by another test shows up. A
// cold cache makes the go command compile the standard library again,
// some tens of seconds each time on two cores, which made those tests most
// of the suite's time. So a template is compiled once per test binary, by
// `go test -count=1 -run ^$` in the run fixture module (everything built,
// no test result cached: -count=1 caches none), and each test's cache
// starts as a copy of it. A cache is content-addressed: a copy holds only
// what any go command would have built itself.

var (
	gocacheOnce sync.Once
	gocacheDir  string
)

// Gocache returns a build cache of t's own, seeded from the template
// (an empty one where the template could not be built).
func Gocache(t *testing.T) string {
	t.Helper()
	gocacheOnce.Do(func() {
		dir, err := os.MkdirTemp("", "nettrap-gocache-")
		if err != nil {
			return
		}
		cmd := exec.Command("go", "test", "-count=1", "-run", "^$", "./...")
		cmd.Dir = Dir(t)
		cmd.Env = Env("GOCACHE=" + dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Logf("no warm build cache (%v): %s", err, out)
			os.RemoveAll(dir)
			return
		}
		gocacheDir = dir
	})
	dst := t.TempDir()
	if gocacheDir != "" {
		if err := CopyTree(gocacheDir, dst); err != nil {
			t.Fatalf("seed the build cache: %v", err)
		}
	}
	return dst
}

var (
	withMu   sync.Mutex
	withDirs = map[string]string{} // GocacheWith's templates, by their packages
)

// GocacheWith is Gocache with the standard packages pkgs compiled in
// too, for a fixture that imports what the run fixture module does not
// (net/http): a second template, made once per test binary from the
// first, so that a test running the go command several times compiles
// them once.
func GocacheWith(t *testing.T, pkgs ...string) string {
	t.Helper()
	key := strings.Join(pkgs, " ")
	withMu.Lock()
	defer withMu.Unlock()
	tmpl, ok := withDirs[key]
	if !ok {
		tmpl = Gocache(t)
		cmd := exec.Command("go", append([]string{"build"}, pkgs...)...)
		cmd.Dir = Dir(t)
		cmd.Env = Env("GOCACHE=" + tmpl)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Logf("%s not in the build cache (%v): %s", key, err, out)
		}
		// The template outlives t's temporary directory.
		dir, err := os.MkdirTemp("", "nettrap-gocache-")
		if err != nil {
			t.Fatal(err)
		}
		if err := CopyTree(tmpl, dir); err != nil {
			t.Fatalf("keep the build cache: %v", err)
		}
		tmpl, withDirs[key] = dir, dir
	}
	dst := t.TempDir()
	if err := CopyTree(tmpl, dst); err != nil {
		t.Fatalf("seed the build cache: %v", err)
	}
	return dst
}

// Cleanup removes the templates (TestMain).
func Cleanup() {
	if gocacheDir != "" {
		os.RemoveAll(gocacheDir)
	}
	withMu.Lock()
	defer withMu.Unlock()
	for _, d := range withDirs {
		os.RemoveAll(d)
	}
}

// CopyTree copies the regular files and directories under src to dst.
func CopyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
}
