package callstack

import (
	"cmp"
	"debug/elf"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

func selfTable(t testing.TB) *Table {
	t.Helper()
	_, tab := selfExe(t)
	return tab
}

// selfExe is the test binary's path and its table.
func selfExe(t testing.TB) (string, *Table) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tab, err := Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	return exe, tab
}

// TestPCSPAllFunctions decodes the frame size table of every function
// of the test binary: each starts with no frame at its entry, covers
// its function's code, and frames are made of 8-byte words.
func TestPCSPAllFunctions(t *testing.T) {
	tab := selfTable(t)
	p := tab.pcln
	n, withFrame, short := 0, 0, 0
	for i := 0; i < p.nfunc; i++ {
		f, ok := p.find(p.textStart + uint64(p.ftabEntry(2*i)))
		if !ok {
			t.Fatalf("function %d not found at its entry", i)
		}
		if f.pcsp() == 0 {
			continue
		}
		n++
		name := p.name(f.nameOff())
		d, ok := p.spdelta(f, f.entry)
		if !ok || d != 0 {
			t.Errorf("%s: frame size %d (%v) at its entry, want 0", name, d, ok)
		}
		// The table covers the function's code; the rest, up to the
		// next function's entry, is alignment padding.
		var max int64
		pc := f.entry
		for ; pc < f.end; pc++ {
			d, ok := p.spdelta(f, pc)
			if !ok {
				break
			}
			max = maxOf(max, d)
		}
		if f.end-pc >= funcAlign {
			// Assembly with data in its text, say.
			short++
			t.Logf("%s: frame sizes up to +%#x of %#x", name, pc-f.entry, f.end-f.entry)
		}
		if max > 0 {
			withFrame++
			if max%8 != 0 {
				t.Errorf("%s: frame size %d, not a multiple of 8", name, max)
			}
		}
	}
	if short > n/100 {
		t.Errorf("%d of %d tables do not cover their function", short, n)
	}
	if n < 1000 || withFrame < n/2 {
		t.Errorf("%d functions with a pcsp table, %d with a frame", n, withFrame)
	}
	if f, ok := p.find(funcPC(TestPCSPAllFunctions)); !ok || p.name(f.nameOff()) != "github.com/nettrap/nettrap/callstack.TestPCSPAllFunctions" {
		t.Errorf("the function at TestPCSPAllFunctions's pc is %q", p.name(f.nameOff()))
	}
}

// funcAlign is the alignment of functions (cmd/internal/sys).
var funcAlign = map[string]uint64{"amd64": 32, "arm64": 16}[runtime.GOARCH]

func maxOf(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

func funcPC(f any) uint64 {
	return uint64(reflect.ValueOf(f).Pointer())
}

// TestPCSPAgainstRuntime unwinds a goroutine of this process, blocked
// in read(2) under reflect.Value.Call and slices.SortFunc's comparison,
// and compares each frame outside the read with what the runtime says
// of the same frames (runtime.Callers from the comparison function).
func TestPCSPAgainstRuntime(t *testing.T) {
	tab := selfTable(t)
	var p [2]int
	if err := syscall.Pipe(p[:]); err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(p[0])
	defer syscall.Close(p[1])
	var rt []runtime.Frame
	done := make(chan struct{})
	go func() {
		defer close(done)
		reflect.ValueOf(sortAndRead).Call([]reflect.Value{reflect.ValueOf(p[0]), reflect.ValueOf(&rt)})
	}()
	tid := 0
	for deadline := time.Now().Add(10 * time.Second); tid == 0 && time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		tid = blockedReading(os.Getpid(), p[0])
	}
	if tid == 0 {
		t.Fatal("the goroutine did not block")
	}
	s, err := tab.UnwindThread(os.Getpid(), tid)
	syscall.Write(p[1], []byte{1})
	<-done
	if err != nil {
		t.Fatal(err)
	}
	if !s.Complete {
		t.Fatalf("incomplete: %s", s.Stop)
	}
	// From sortAndRead's caller on, both name the same calls, but for
	// the runtime's assembly frames of reflect calls (runtime.call16,
	// the ABI wrapper of runtime.reflectcall), which runtime.Callers
	// does not show, and runtime.goexit, where an unwind stops.
	i := slices.IndexFunc(s.Frames, func(f Frame) bool { return strings.HasSuffix(f.Func, ".sortAndRead.func1") })
	j := slices.IndexFunc(rt, func(f runtime.Frame) bool { return strings.HasSuffix(f.Function, ".sortAndRead.func1") })
	if i < 0 || j < 0 {
		t.Fatalf("sortAndRead.func1 not found (%d, %d)", i, j)
	}
	ours, theirs := s.Frames[i+1:], rt[j+1:]
	if k := len(theirs) - 1; k < 0 || theirs[k].Function != "runtime.goexit" {
		t.Fatalf("the runtime's frames do not end with runtime.goexit: %v", theirs)
	}
	theirs = theirs[:len(theirs)-1]
	k, skipped := 0, 0
	for _, f := range ours {
		t.Logf("%s:%d %s", f.File, f.Line, f.Func)
		if k < len(theirs) && f.Func == theirs[k].Function && f.Line == theirs[k].Line && f.File == theirs[k].File {
			k++
			continue
		}
		if FuncPackage(f.Func) == "runtime" && skipped < 2 {
			skipped++
			continue
		}
		t.Errorf("%s:%d %s: the runtime says %+v", f.File, f.Line, f.Func, theirs[k:])
		break
	}
	if k != len(theirs) || k < 6 {
		t.Errorf("%d of the runtime's %d frames found", k, len(theirs))
	}
}

// sortAndRead sorts, and the comparison blocks reading fd.
//
//go:noinline
func sortAndRead(fd int, rt *[]runtime.Frame) {
	s := []int{3, 1, 2}
	blocked := false
	slices.SortFunc(s, func(a, b int) int {
		if !blocked {
			blocked = true
			pcs := make([]uintptr, 64)
			fs := runtime.CallersFrames(pcs[:runtime.Callers(1, pcs)])
			for {
				f, more := fs.Next()
				*rt = append(*rt, f)
				if !more {
					break
				}
			}
			var b [1]byte
			syscall.Read(fd, b[:])
		}
		return cmp.Compare(a, b)
	})
}

func TestPclntabLayouts(t *testing.T) {
	hdr := func(magic uint32) []byte {
		b := make([]byte, 128)
		b[0], b[1], b[2], b[3] = byte(magic), byte(magic>>8), byte(magic>>16), byte(magic>>24)
		b[6], b[7] = 1, 8
		return b
	}
	for _, c := range []struct {
		magic uint32
		want  string
	}{
		{0xfffffff0, "older than 1.20"},
		{0xfffffffa, "older than 1.20"},
		{0xfffffffb, "older than 1.20"},
		{0xf1ffffff, "big-endian"},
	} {
		_, err := parsePclntab(hdr(c.magic), 0x401000)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("magic %#x: %v, want %q", c.magic, err, c.want)
		}
	}
	if _, err := parsePclntab(hdr(go120Magic), 0x401000); err != nil {
		t.Errorf("an empty Go 1.20 table: %v", err)
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "script")
	if err := os.WriteFile(script, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(script); err == nil {
		t.Error("opened a shell script")
	}
	if _, err := Open(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v", err)
	}
	if _, err := os.Stat("/bin/true"); err == nil {
		// A C program, most likely: no Go tables.
		if _, err := Open("/bin/true"); err == nil || !strings.Contains(err.Error(), ".gopclntab") {
			t.Errorf("/bin/true: %v, want no .gopclntab", err)
		}
	}
}

// An executable the host linker linked (cgo's external linking) has C
// start-up code at the start of .text: function offsets count from
// runtime.text, further on. Every Go function of the symbol table must
// be found at its own address under its own name, and a stripped build
// (no symbol table: the pclntab header tells) must agree.
func TestExternalLinking(t *testing.T) {
	exe := buildFixture(t, "external")
	tab, err := Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	ef, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	syms, err := ef.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	var text, checked, wrong int
	funcs := map[string]uint64{}
	for _, s := range syms {
		if s.Name == "runtime.text" {
			text++
			if ts := ef.Section(".text"); s.Value == ts.Addr {
				t.Logf("runtime.text is where .text starts: the test proves nothing about the offset")
			}
		}
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Value == 0 || s.Name == "runtime.text" {
			continue
		}
		// The symbol table writes an ABI0 function's name with .abi0,
		// and a middle dot as a dot.
		name := strings.TrimSuffix(s.Name, ".abi0")
		f, ok := tab.pcln.find(s.Value)
		if !ok {
			continue // C code
		}
		checked++
		funcs[name] = s.Value
		if got := tab.pcln.name(f.nameOff()); f.entry != s.Value || strings.ReplaceAll(got, "·", ".") != name {
			if wrong++; wrong <= 5 {
				t.Errorf("symbol %s at %#x: the table has %s at %#x", s.Name, s.Value, got, f.entry)
			}
		}
	}
	if text != 1 || checked < 1000 || funcs["main.main"] == 0 {
		t.Fatalf("runtime.text %d times, %d functions checked, main.main at %#x: not the binary expected", text, checked, funcs["main.main"])
	}
	if wrong > 0 {
		t.Errorf("%d of %d functions misplaced", wrong, checked)
	}
	stripped, err := Open(buildFixture(t, "external-stripped"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"main.main", "runtime.goexit", "runtime.asmcgocall"} {
		want := tab.sym.LookupFunc(name)
		got := stripped.sym.LookupFunc(name)
		if want == nil || got == nil || got.Entry != want.Entry {
			t.Errorf("%s: stripped build has %v, the build with symbols %v", name, got, want)
		}
	}
}
