package gotest

import (
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/mod/modfile"
)

// ImportPath works out the import path of the package under test from the
// directory the go command runs the binary in (the package's own source
// directory) and the module's go.mod above it. Outside a module it falls
// back to the binary's name without ".test".
func ImportPath(dir, binary string) string {
	for d := dir; ; {
		if data, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil {
			if mod := modfile.ModulePath(data); mod != "" {
				rel, err := filepath.Rel(d, dir)
				if err != nil || rel == "." {
					return mod
				}
				return mod + "/" + filepath.ToSlash(rel)
			}
		}
		parent := filepath.Dir(d)
		if parent == d {
			break
		}
		d = parent
	}
	return strings.TrimSuffix(filepath.Base(binary), ".test")
}
