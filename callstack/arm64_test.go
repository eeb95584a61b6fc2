package callstack

import (
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestUnwindARM64Synthetic unwinds, on any machine, a stack laid out
// the way arm64 Go code lays it out, for the call chain of the arm64
// build of the fixture: the frame sizes from its pcsp tables, each
// saved return address after its BL. It runs the arm64 code (the
// frameless syscall stub without the link register, and with it) that
// the amd64 machines cannot run on a real thread.
func TestUnwindARM64Synthetic(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		skipUnlessCI(t, "building the fixture needs the go command: %v", err)
	}
	exe := filepath.Join(t.TempDir(), "fixture-arm64")
	cmd := exec.Command(goCmd, "build", "-o", exe, "-ldflags=-s -w", ".")
	cmd.Dir = filepath.Join("testdata", "fixture")
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOARCH=arm64", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	tab, err := Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	if tab.Arch != ARM64 {
		t.Fatalf("arch %v", tab.Arch)
	}
	// The physical functions from the syscall stub to the goroutine's
	// first function, innermost first, as they call one another.
	names := []string{"syscall.RawSyscall6", "syscall.Syscall", "syscall.read", "main.inner", "main.outer", "main.reader", "main.start.gowrap1"}
	leaf := tab.mustFunc(t, "internal/runtime/syscall/linux.Syscall6")
	chain := []fn{leaf}
	for _, n := range names {
		f := tab.mustFunc(t, n)
		callee := chain[len(chain)-1]
		if _, err := tab.onlyCallTo(f, callee.entry); err != nil {
			// An ABI wrapper in between.
			w, ok := tab.callerOf(callee, f)
			if !ok {
				t.Fatalf("%s does not call %s: %v", n, tab.pcln.name(callee.nameOff()), err)
			}
			chain = append(chain, w)
		}
		chain = append(chain, f)
	}
	// The stack: the stub has no frame; each caller saved the return
	// address into its own caller at 0(sp).
	const base = 0x4000_0000
	mem := fakeMemory{}
	sp := uint64(base)
	var rets []uint64
	for i := 1; i < len(chain); i++ {
		site, err := tab.onlyCallTo(chain[i], chain[i-1].entry)
		if err != nil {
			t.Fatal(err)
		}
		rets = append(rets, site+4)
	}
	sps := []uint64{sp}
	for i := 1; i < len(chain); i++ {
		size, ok := tab.pcln.spdelta(chain[i], rets[i-1])
		if !ok || size <= 0 {
			t.Fatalf("%s: frame size %d", tab.pcln.name(chain[i].nameOff()), size)
		}
		next := tab.goexit.entry + tab.pcln.quantum
		if i < len(rets) {
			next = rets[i]
		}
		mem[sp] = next
		sp += uint64(size)
		sps = append(sps, sp)
	}
	pc := leaf.entry + 8
	if d, ok := tab.pcln.spdelta(leaf, pc); !ok || d != 0 {
		t.Fatalf("the stub has a frame: %d", d)
	}
	var want []string
	for _, f := range chain {
		switch n := tab.pcln.name(f.nameOff()); n {
		case "main.inner", "main.outer":
			// With the call inlined at its pc.
			want = append(want, map[string]string{"main.inner": "syscall.Read", "main.outer": "main.inlined"}[n], n)
		default:
			want = append(want, n)
		}
	}
	for _, lr := range []uint64{0, rets[0]} {
		s := tab.Unwind(mem, 0, Regs{PC: pc, SP: base, LR: lr})
		var got []string
		for _, f := range s.Frames {
			got = append(got, f.Func)
		}
		if !s.Complete || strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("LR %#x: complete %v (%s):\n got %v\nwant %v", lr, s.Complete, s.Stop, got, want)
		}
		lines := markers(t, filepath.Join("testdata", "fixture", "main.go"))
		w, ok := tab.Where(s)
		if wantW := fmt.Sprintf("main.go:%d (main.inner)", lines["inner"]); !ok || w.String() != wantW || w.Entry != "main.reader" {
			t.Errorf("LR %#x: where %q entry %q; want %q main.reader", lr, w, w.Entry, wantW)
		}
	}
	// From the stub's SVC (where arm64 rewinds the pc of a call to
	// restart before a ptrace stop): the same frames as from after it.
	svc := uint64(0)
	for a := leaf.entry; a+4 <= leaf.end; a += 4 {
		if isSVCARM64(binary.LittleEndian.Uint32(tab.code(a+4, 4))) {
			svc = a
		}
	}
	if svc == 0 {
		t.Fatal("no SVC in the stub")
	}
	for _, lr := range []uint64{0, rets[0]} {
		on := tab.Unwind(mem, 0, Regs{PC: svc, SP: base, LR: lr})
		after := tab.Unwind(mem, 0, Regs{PC: svc + 4, SP: base, LR: lr})
		if !on.Complete || !slices.Equal(on.Frames, after.Frames) || on.Frames[0].PC != svc+4 {
			t.Errorf("LR %#x: from the SVC at %#x: complete %v (%s):\n%s\nfrom after it:\n%s", lr, svc, on.Complete, on.Stop, frameList(on.Frames), frameList(after.Frames))
		}
	}
	// A return address that does not follow a call ends the walk.
	mem[sps[2]] += 4
	if s := tab.Unwind(mem, 0, Regs{PC: pc, SP: base}); s.Complete || !strings.Contains(s.Stop, "not after a call") {
		t.Errorf("a return address after no call: complete %v, %q", s.Complete, s.Stop)
	}
	// Without a saved return address, the stub's caller is unknown.
	delete(mem, base)
	if s := tab.Unwind(mem, 0, Regs{PC: pc, SP: base}); s.Complete || len(s.Frames) != 1 || s.Stop == "" {
		t.Errorf("an unreadable stack: complete %v, %d frames, %q", s.Complete, len(s.Frames), s.Stop)
	}
}

func (t *Table) mustFunc(tb testing.TB, name string) fn {
	tb.Helper()
	g := t.sym.LookupFunc(name)
	if g == nil {
		tb.Fatalf("no function %s", name)
	}
	f, ok := t.pcln.find(g.Entry)
	if !ok {
		tb.Fatalf("%s not in the table", name)
	}
	return f
}

// callerOf returns the function that outer calls and that calls inner.
func (t *Table) callerOf(inner, outer fn) (fn, bool) {
	for a := outer.entry; a+4 <= outer.end; a += 4 {
		w := binary.LittleEndian.Uint32(t.code(a+4, 4))
		if to, ok := blTarget(w, a); ok {
			if f, ok := t.pcln.find(to); ok && f.entry == to {
				if _, err := t.onlyCallTo(f, inner.entry); err == nil {
					return f, true
				}
			}
		}
	}
	return fn{}, false
}

// fakeMemory is a stack of 8-byte words.
type fakeMemory map[uint64]uint64

func (m fakeMemory) ReadAt(p []byte, off int64) (int, error) {
	v, ok := m[uint64(off)]
	if !ok || len(p) != 8 {
		return 0, fmt.Errorf("nothing at %#x", off)
	}
	binary.LittleEndian.PutUint64(p, v)
	return 8, nil
}
