package runmod

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/nettrap/nettrap/integration/internal/harness"
)

// The module's directory, below the root of nettrap's module.
const modDir = "integration/testdata/run"

var root = sync.OnceValues(func() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && modulePath(b) == "github.com/nettrap/nettrap" {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod of github.com/nettrap/nettrap above the working directory")
		}
		dir = parent
	}
})

// modulePath is the path the module line of a go.mod names.
func modulePath(gomod []byte) string {
	for line := range strings.Lines(string(gomod)) {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "module" {
			return f[1]
		}
	}
	return ""
}

// Dir is the run fixture module's directory, found from the test's
// working directory (its package's source directory) up.
func Dir(t testing.TB) string {
	t.Helper()
	r, err := root()
	if err != nil {
		t.Fatalf("the run fixture module: %v", err)
	}
	return filepath.Join(r, modDir)
}

// Env is the environment for the go command in the fixture module: no
// module downloads, no toolchain switch, the fixtures switched on; then
// extra.
func Env(extra ...string) []string {
	env := append(harness.Environ(), "GOPROXY=off", "GOTOOLCHAIN=local", "GOWORK=off", "GOFLAGS=", "NTRUNFIX=1")
	return append(env, extra...)
}
