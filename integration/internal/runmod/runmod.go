package runmod

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
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
		if err == nil && bytes.HasPrefix(b, []byte("module github.com/nettrap/nettrap\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod of github.com/nettrap/nettrap above the working directory")
		}
		dir = parent
	}
})

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
