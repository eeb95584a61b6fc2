package gotest

import (
	"bytes"
	"debug/buildinfo"
	"debug/elf"
	"io"
	"strings"
)

// What makes a test binary.
//
// The go command links every test binary with a generated main that runs
// testing.M; its build info names the package, with ".test" appended for
// every package but a main one (whose test binary carries the package's
// own path). So a binary is a test binary when it is a Go program whose
// function table (.gopclntab, kept by -ldflags=-s -w, -trimpath, -race,
// -cover, cgo and PIE builds alike: the runtime needs it) names
// testing.(*M).Run, the method the generated main calls. The name, not
// the path, decides: a main package's test binary and `go test -c -o
// anything` are recognized, a program named *.test that is not one is not.

// testMainFunc is the function every test binary's main runs, as the
// function table spells it: NUL-terminated names, one after another.
const testMainFunc = "\x00testing.(*M).Run\x00"

// ReadBinary tells whether r is a Go test binary, and names the package
// it tests.
func ReadBinary(r io.ReaderAt) (pkg string, ok bool) {
	bi, err := buildinfo.Read(r)
	if err != nil || !linksTestingMain(r) {
		return "", false
	}
	return strings.TrimSuffix(bi.Path, ".test"), true
}

// linksTestingMain looks for testMainFunc in the function table, or in
// the whole file where no section is named so (a linker of its own).
func linksTestingMain(r io.ReaderAt) bool {
	f, err := elf.NewFile(r)
	if err != nil {
		return false
	}
	if s := f.Section(".gopclntab"); s != nil {
		b, err := s.Data()
		return err == nil && bytes.Contains(b, []byte(testMainFunc))
	}
	return containsIn(r, testMainFunc)
}

// containsIn scans r for s, a window at a time.
func containsIn(r io.ReaderAt, s string) bool {
	const window = 1 << 20
	buf := make([]byte, window+len(s))
	for off := int64(0); ; off += window {
		n, err := r.ReadAt(buf, off)
		if bytes.Contains(buf[:n], []byte(s)) {
			return true
		}
		if err != nil {
			return false
		}
	}
}
