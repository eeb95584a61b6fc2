package callstack

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// fakeStack is memory of a process, a word at a time: what crossCgo
// reads.
type fakeStack map[uint64]uint64

func (m fakeStack) read(a uint64) (uint64, error) {
	if v, ok := m[a]; ok {
		return v, nil
	}
	if a >= 0x7000_0000_0000 && a < 0x7000_0002_0000 {
		return 0, nil // the rest of the system stack
	}
	return 0, fmt.Errorf("bad address %#x", a)
}

// callReturn is a return address in function name of the test binary:
// right after one of its direct calls.
func callReturn(t *testing.T, tab *Table, name string) uint64 {
	t.Helper()
	if f := tab.sym.LookupFunc(name); f != nil {
		for pc := f.Entry; pc+5 <= f.End; pc++ {
			ret := pc + 5
			if b := tab.code(ret, 5); len(b) == 5 && b[0] == 0xe8 && tab.verifyReturn(ret) == nil {
				if fn, ok := tab.pcln.find(ret - 1); ok && tab.pcln.name(fn.nameOff()) == name {
					return ret
				}
			}
		}
	}
	t.Fatalf("no direct call found in %s of the test binary", name)
	return 0
}

// TestCrossCgo: from C code's sp, the walk finds asmcgocall's frame on
// the system stack and resumes on the goroutine's stack, at the return
// address there (or one word above, past a saved frame pointer); a g, a
// depth or a return address that does not fit stops it, as does a
// system stack with no such frame.
func TestCrossCgo(t *testing.T) {
	tab := selfTable(t)
	if tab.Arch != AMD64 {
		t.Skip("the cgo crossing is read on amd64 only")
	}
	ret := callReturn(t, tab, "runtime.asmcgocall")
	goRet := callReturn(t, tab, "testing.tRunner") // where the goroutine's walk resumes
	const (
		cSP  = 0x7000_0000_1000 // the C code's sp on the system stack
		slot = cSP + 0x200      // asmcgocall's call's return address
		g    = 0x00c0_0000_8000
		lo   = 0x00c0_0010_0000
		hi   = 0x00c0_0010_8000
	)
	layout := func(depth uint64, gp uint64, goWords ...uint64) fakeStack {
		m := fakeStack{slot: ret, slot + 8: depth, slot + 16: gp, g: lo, g + 8: hi}
		for i, w := range goWords {
			m[hi-depth+8*uint64(i)] = w
		}
		return m
	}
	for _, c := range []struct {
		name   string
		mem    fakeStack
		wantSP uint64 // 0: an error
		err    string
	}{
		{"return address at the goroutine's sp", layout(0x100, g, goRet), hi - 0x100 + 8, ""},
		{"after a saved frame pointer", layout(0x100, g, hi-0x40, goRet), hi - 0x100 + 16, ""},
		{"no goroutine (system stack)", layout(0x100, 0, goRet), 0, "no goroutine"},
		{"depth beyond the stack", layout(hi-lo+8, g, goRet), 0, "do not fit"},
		{"no return address there", layout(0x100, g, 0x1234, 0x5678), 0, "no return address"},
		{"no asmcgocall frame", fakeStack{cSP: 42}, 0, errNoCgoFrame.Error()},
		{"a stale frame below the live one", withStale(layout(0x100, g, goRet), slot-0x80, ret), hi - 0x100 + 8, ""},
		{"only a stale frame", withStale(fakeStack{}, slot-0x80, ret), 0, "no goroutine"},
	} {
		t.Run(c.name, func(t *testing.T) {
			pc, sp, err := tab.crossCgo(c.mem.read, cSP, 0)
			if c.wantSP == 0 {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Errorf("got pc %#x sp %#x, error %v; want an error saying %q", pc, sp, err, c.err)
				}
				return
			}
			if err != nil || pc != goRet || sp != c.wantSP {
				t.Errorf("got pc %#x sp %#x (%v), want %#x %#x", pc, sp, err, goRet, c.wantSP)
			}
		})
	}
	if _, _, err := tab.crossCgo(fakeStack{}.read, 0x10, 0); err == nil || errors.Is(err, errNoCgoFrame) {
		t.Errorf("an unreadable stack: %v, want the read's error", err)
	}
}

// withStale adds, at a, what a call of asmcgocall from the system stack
// leaves (its return address, a depth, g 0): a stale frame.
func withStale(m fakeStack, a, ret uint64) fakeStack {
	m[a], m[a+8], m[a+16] = ret, 0x7000_0000_2000, 0
	return m
}
