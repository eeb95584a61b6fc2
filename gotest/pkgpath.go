package gotest

import (
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/mod/modfile"
)

// Package names the package a test binary tests: the import path in its
// build info (the go command builds it as "<import path>.test"), whatever
// the directory it runs in. Only without build info does it fall back to
// ImportPath's guess from dir.
func Package(argv0, dir string) string {
	if path, ok := testMainPath(argv0); ok {
		return strings.TrimSuffix(path, ".test")
	}
	return ImportPath(dir, argv0)
}

// ImportPath guesses the import path of the package under test from the
// directory the binary runs in (the go command runs it in the package's
// source directory) and the module's go.mod above it. Outside a module it
// falls back to the binary's name without ".test".
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
