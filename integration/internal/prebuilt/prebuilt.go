package prebuilt

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Env names the directory of prebuilt programs; unset or empty, the tests
// build their programs themselves.
const Env = "NETTRAP_TEST_PREBUILT"

// ErrMissing is what Lookup's error wraps when DIR lacks the program.
var ErrMissing = errors.New("missing from the prebuilt directory")

// Dir is the directory Env names, or "" when the tests build their own.
func Dir() string { return os.Getenv(Env) }

// Lookup returns name's path in Dir when Env is set (used true); an error
// when it is set but the program is not there, or is not an executable
// file. With Env unset it returns used false: the caller builds name.
func Lookup(name string) (path string, used bool, err error) {
	dir := Dir()
	if dir == "" {
		return "", false, nil
	}
	return lookupIn(dir, name)
}

func lookupIn(dir, name string) (string, bool, error) {
	p := filepath.Join(dir, name)
	fi, err := os.Stat(p)
	if errors.Is(err, os.ErrNotExist) {
		return "", true, fmt.Errorf("prebuilt: %s %w %s (%s): build it there or unset %s", name, ErrMissing, dir, Env, Env)
	}
	if err != nil {
		return "", true, fmt.Errorf("prebuilt: %s: %w", name, err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return "", true, fmt.Errorf("prebuilt: %s in %s is not an executable file (mode %v)", name, dir, fi.Mode())
	}
	return p, true, nil
}
