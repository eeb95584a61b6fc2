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

// FixturesDir is where in Dir the fixture module's test binaries are
// (integration/testdata: PKG.test, as `go test -c -o DIR/` names them).
const FixturesDir = "fixtures"

// Fixtures returns the directory that holds the prebuilt test binary of
// each of the fixture module's packages pkgs when Env is set (used true),
// or an error naming the first one missing. With Env unset it returns used
// false: the caller builds them with the go command.
func Fixtures(pkgs ...string) (dir string, used bool, err error) {
	if Dir() == "" {
		return "", false, nil
	}
	for _, p := range pkgs {
		if _, _, err := Lookup(filepath.Join(FixturesDir, p+".test")); err != nil {
			return "", true, err
		}
	}
	return filepath.Join(Dir(), FixturesDir), true, nil
}
