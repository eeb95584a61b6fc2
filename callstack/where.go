package callstack

import (
	"path"
	"strconv"
	"strings"
)

// Where is where an attempt was made: the first frame of a stack in the
// executable's main module, and the goroutine's entry function.
type Where struct {
	// Frame is the innermost frame in the main module (see User).
	Frame Frame
	// Package is Frame's import path ("main" for a main package).
	Package string
	// RelFile is Frame's file relative to the module's root, when that
	// can be told (from the package's import path, or a -trimpath
	// name); "" otherwise.
	RelFile string
	// Entry is the goroutine's entry function: the outermost frame (for
	// a go statement's wrapper pkg.F.gowrap1, the function it calls; for
	// the main goroutine, main.main),
	// or for a goroutine the testing package started, the first
	// function it called (the test, benchmark or fuzz function). ""
	// when the stack is not Complete.
	Entry string
	// EntryIsTest tells that Entry was called by the testing package's
	// goroutine (testing.tRunner and the like): Entry is the test.
	EntryIsTest bool
}

// String returns "file.go:LINE (pkg.Func)": the file's base name and
// the function with the last element of its import path.
func (w Where) String() string {
	return path.Base(w.Frame.File) + ":" + strconv.Itoa(w.Frame.Line) + " (" + ShortName(w.Frame.Func) + ")"
}

// Where returns where the stack s was, in the table's main module:
// false when no frame of s is in it, or the table has no module path.
func (t *Table) Where(s *Stack) (Where, bool) {
	var w Where
	found := false
	for _, f := range s.Frames {
		if f.Func == "" || f.Line == 0 {
			continue
		}
		if pkg := FuncPackage(f.Func); t.isUser(pkg, f.File) {
			w.Frame, w.Package, found = f, pkg, true
			w.RelFile = t.relFile(pkg, f.File)
			break
		}
	}
	w.Entry, w.EntryIsTest = entry(s)
	return w, found
}

// entry returns the goroutine's entry function of a complete stack.
func entry(s *Stack) (string, bool) {
	if !s.Complete || len(s.Frames) == 0 {
		return "", false
	}
	i := len(s.Frames) - 1
	if FuncPackage(s.Frames[i].Func) == "testing" {
		// The testing package's goroutine: the first function it
		// called, past its own frames and those of a reflect call
		// (fuzz functions).
		for j := i - 1; j >= 0; j-- {
			if !testingMachinery(FuncPackage(s.Frames[j].Func)) {
				return s.Frames[j].Func, true
			}
		}
		return s.Frames[i].Func, false
	}
	if i > 0 && (isGowrap(s.Frames[i].Func) || s.Frames[i].Func == "runtime.main") {
		// The wrapper of a go statement with arguments: the function
		// the statement named is the next frame; the main goroutine's
		// is main.main.
		i--
	}
	return s.Frames[i].Func, false
}

// testingMachinery tells whether a package's frames stand between the
// testing package's goroutine and the test function.
func testingMachinery(pkg string) bool {
	return pkg == "testing" || pkg == "reflect" || pkg == "runtime" || strings.HasPrefix(pkg, "internal/")
}

// isGowrap tells whether name is the compiler's wrapper of a go
// statement: pkg.F.gowrap1.
func isGowrap(name string) bool {
	i := strings.LastIndex(name, ".gowrap")
	if i < 0 || i+len(".gowrap") == len(name) {
		return false
	}
	for _, c := range name[i+len(".gowrap"):] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// isUser tells whether a function of package pkg, in file, is the main
// module's own: in the module's path, not vendored (the standard
// library, runtime and internal packages are std's); or of the package
// built from files named on the command line. cgo's generated code is
// not the user's.
func (t *Table) isUser(pkg, file string) bool {
	if strings.HasPrefix(path.Base(file), "_cgo_") {
		// cgo's generated wrappers (_cgo_gotypes.go: _Cfunc_f), in the
		// build's cache: the user's call is the frame above.
		return false
	}
	if strings.TrimSuffix(pkg, "_test") == "command-line-arguments" {
		// Built from files named on the command line: the user's,
		// module or not.
		return true
	}
	if t.Module == "" {
		return false
	}
	if pkg == "main" {
		// The main package: the module's, but for a test binary's
		// generated one.
		return path.Base(file) != "_testmain.go"
	}
	if strings.Contains(pkg, "/vendor/") || strings.HasPrefix(pkg, "vendor/") {
		return false
	}
	// The standard library (runtime, net, syscall, internal/...) is
	// no module's but std's.
	pkg = strings.TrimSuffix(pkg, "_test") // an external test package
	return pkg == t.Module || strings.HasPrefix(pkg, t.Module+"/")
}

// relFile returns file relative to the module's root, or "".
func (t *Table) relFile(pkg, file string) string {
	if pkg == "main" {
		pkg = t.MainPackage
	}
	pkg = strings.TrimSuffix(pkg, "_test")
	if pkg == "" || t.Module == "" {
		return ""
	}
	if rel, ok := strings.CutPrefix(file, t.Module+"/"); ok { // -trimpath
		return rel
	}
	sub := strings.TrimPrefix(strings.TrimPrefix(pkg, t.Module), "/")
	dir := path.Dir(file)
	if sub == "" {
		return path.Base(file)
	}
	if strings.HasSuffix(dir, "/"+sub) {
		return sub + "/" + path.Base(file)
	}
	return ""
}

// FuncPackage returns the import path of the package of a function
// name: "example.com/m/pkg" for "example.com/m/pkg.(*T).M" or
// "example.com/m/pkg.F[...].func1", "gopkg.in/yaml.v3" for the
// linker's "gopkg.in/yaml%2ev3.Unmarshal".
func FuncPackage(name string) string {
	return unescapePath(rawPackage(name))
}

// rawPackage returns the package part of a symbol name, as written.
func rawPackage(name string) string {
	slash := strings.LastIndexByte(name, '/')
	if b := strings.IndexByte(name, '['); b >= 0 && b < slash {
		// A slash in type arguments.
		slash = strings.LastIndexByte(name[:b], '/')
	}
	dot := strings.IndexByte(name[slash+1:], '.')
	if dot < 0 {
		return name
	}
	return name[:slash+1+dot]
}

// unescapePath undoes the linker's escapes of an import path in a
// symbol name (cmd/internal/objabi.PathToPrefix): %XX for a dot in the
// last element, and for control characters, '%', '"' and non-ASCII.
func unescapePath(p string) string {
	if !strings.Contains(p, "%") {
		return p
	}
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] == '%' && i+2 < len(p) {
			if v, err := strconv.ParseUint(p[i+1:i+3], 16, 8); err == nil {
				b.WriteByte(byte(v))
				i += 2
				continue
			}
		}
		b.WriteByte(p[i])
	}
	return b.String()
}

// SourceName is fn as the source of its package names it: a function
// of the main package under test in a test binary, which the linker
// names by the package's import path ("example.com/m/tool.ping"), is
// "main.ping", as in the program built from the same package and as its
// author writes it; "example.com/m/tool_test.TestX" is
// "main_test.TestX". Every other name is fn. The table of a test binary
// of a main package has that package's path as MainPackage (its build
// information names it, not a ".test" path); a program's own main
// package is named "main" already.
func (t *Table) SourceName(fn string) string {
	if t.MainPackage == "" {
		return fn
	}
	raw := rawPackage(fn)
	switch unescapePath(raw) {
	case t.MainPackage:
		return "main" + fn[len(raw):]
	case t.MainPackage + "_test":
		return "main_test" + fn[len(raw):]
	}
	return fn
}

// ShortName returns a function's name with only the last element of its
// package's import path: "pkg.(*T).M" for "example.com/m/pkg.(*T).M".
func ShortName(name string) string {
	raw := rawPackage(name)
	return path.Base(unescapePath(raw)) + name[len(raw):]
}
