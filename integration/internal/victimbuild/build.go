package victimbuild

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/nettrap/nettrap/integration/internal/prebuilt"
)

// Packages the integration tests build.
const (
	VictimPkg  = "github.com/nettrap/nettrap/integration/internal/victim"
	NettrapPkg = "github.com/nettrap/nettrap/cmd/nettrap"
)

type result struct {
	once sync.Once
	path string
	err  error
}

var (
	mu      sync.Mutex
	results = map[string]*result{}
	dir     string
	dirErr  error
	dirOnce sync.Once
)

// Build builds pkg (an import path) once per test binary and returns the
// path of the executable. A failed build fails t with the compiler output,
// every time it is asked for.
func Build(t testing.TB, pkg string) string {
	t.Helper()
	p, err := build(pkg)
	if err != nil {
		t.Fatalf("victimbuild: %v", err)
	}
	return p
}

// Victim returns the path of the victim program.
func Victim(t testing.TB) string {
	t.Helper()
	return Build(t, VictimPkg)
}

// Nettrap returns the path of the nettrap command; its tests fail (with the
// build output) while cmd/nettrap does not build.
func Nettrap(t testing.TB) string {
	t.Helper()
	return Build(t, NettrapPkg)
}

// Cleanup removes the build directory; call it after m.Run.
func Cleanup() {
	if dir != "" {
		_ = os.RemoveAll(dir)
	}
}

func build(pkg string) (string, error) {
	mu.Lock()
	r := results[pkg]
	if r == nil {
		r = &result{}
		results[pkg] = r
	}
	mu.Unlock()
	r.once.Do(func() {
		// A prebuilt directory (NETTRAP_TEST_PREBUILT) replaces the go
		// command, which a guest of the kernel matrix does not have.
		if p, used, err := prebuilt.Lookup(path.Base(pkg)); used {
			r.path, r.err = p, err
			return
		}
		r.path, r.err = goBuild(pkg)
	})
	return r.path, r.err
}

func goBuild(pkg string) (string, error) {
	dirOnce.Do(func() { dir, dirErr = os.MkdirTemp("", "ntharness-bin-") })
	if dirErr != nil {
		return "", fmt.Errorf("build dir: %w", dirErr)
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("build %s: %w", pkg, err)
	}
	out := filepath.Join(dir, path.Base(pkg))
	cmd := exec.Command(gobin, "build", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "GOPROXY=off", "GOTOOLCHAIN=local")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", pkg, err, strings.TrimSpace(string(b)))
	}
	return out, nil
}
