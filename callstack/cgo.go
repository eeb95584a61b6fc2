package callstack

import (
	"errors"
	"fmt"
)

// A thread in C code that Go called through cgo runs on its system
// stack, where Go's tables say nothing about the C frames. But the way
// there is fixed: runtime.asmcgocall (amd64) saved, on the system stack
// right above the return address of its call towards C, the depth of
// the goroutine's stack pointer below the stack's top, and the
// goroutine's g, whose first words are its stack's bounds:
//
//	A+16  g            (g.stack.lo at g+0, g.stack.hi at g+8)
//	A+8   depth        (g.stack.hi - the sp asmcgocall was called with)
//	A     return address into asmcgocall (its CALL of the landing pad,
//	      or of the C function itself before Go 1.26)
//
// The walk looks up from the C code's sp for such a return address,
// verified as one (in asmcgocall, after a call instruction), checks the
// g and depth it finds against each other (the goroutine's sp within
// its stack), and goes on from the goroutine's sp, where asmcgocall's
// own return address into runtime.cgocall is (or a word above, past a
// saved frame pointer), verified as every return address is. A word that merely looks like that return address (a
// stale copy in a C frame) yields a g and depth that fail the checks, or
// a return address that fails verification: then the walk stops, as
// before, with no location. The layout is the runtime's since Go 1.5
// (asm_amd64.s); arm64's is not read (the walk stops in C there).

// cgoScanLimit bounds the search above the C code's sp: the C frames
// of a system call's wrapper are small.
const cgoScanLimit = 64 << 10

// maxGoroutineStack bounds a goroutine stack's size (the runtime's
// default maximum is 1 GB).
const maxGoroutineStack = 1 << 30

var errNoCgoFrame = errors.New("no cgo call's frame above the C code's stack pointer")

// crossCgo finds the Go side of a cgo call from the C code's sp: the
// return address into runtime.cgocall and the sp above it.
func (t *Table) crossCgo(read func(uint64) (uint64, error), sp, bias uint64) (pc, goSP uint64, err error) {
	if t.Arch != AMD64 {
		return 0, 0, errNoCgoFrame
	}
	last := errNoCgoFrame
	for a := sp &^ 7; a < sp+cgoScanLimit; a += 8 {
		w, err := read(a)
		if err != nil {
			if last != errNoCgoFrame {
				return 0, 0, last
			}
			return 0, 0, err
		}
		if w < bias || !t.inAsmcgocall(w-bias) || t.verifyReturn(w-bias) != nil {
			continue
		}
		pc, goSP, err := t.cgoGoroutine(read, a, bias)
		if err == nil {
			return pc, goSP, nil
		}
		// A stale frame below the live one: an asmcgocall the runtime
		// made from the system stack itself (its mmap, with g 0) left
		// one where the C frames have not written over it. The live
		// frame is further up: go on.
		last = fmt.Errorf("cgo call's frame at %#x: %w", a, err)
	}
	return 0, 0, last
}

// cgoGoroutine reads the goroutine's sp from asmcgocall's frame at a (the
// return address's slot) and the return address there.
func (t *Table) cgoGoroutine(read func(uint64) (uint64, error), a, bias uint64) (pc, goSP uint64, err error) {
	depth, err := read(a + 8)
	if err != nil {
		return 0, 0, err
	}
	g, err := read(a + 16)
	if err != nil {
		return 0, 0, err
	}
	if g == 0 {
		return 0, 0, errors.New("no goroutine (a call from the system stack)")
	}
	lo, err := read(g)
	if err != nil {
		return 0, 0, err
	}
	hi, err := read(g + 8)
	if err != nil {
		return 0, 0, err
	}
	if hi <= lo || hi-lo > maxGoroutineStack || depth == 0 || depth >= hi-lo || depth%8 != 0 {
		return 0, 0, fmt.Errorf("goroutine stack [%#x, %#x) and depth %#x do not fit", lo, hi, depth)
	}
	// The goroutine's sp as asmcgocall had it: its return address into
	// the Go caller (runtime.cgocall) is there, or a word above when
	// the assembler gave asmcgocall a frame pointer (Go 1.26 does).
	sp := hi - depth
	for _, slot := range []uint64{sp, sp + 8} {
		if pc, err = read(slot); err != nil {
			return 0, 0, err
		}
		if pc >= bias && t.verifyReturn(pc-bias) == nil {
			return pc, slot + 8, nil
		}
	}
	return 0, 0, fmt.Errorf("no return address at the goroutine's sp %#x", sp)
}

// inAsmcgocall tells whether the return address ret (link-time) is in
// runtime.asmcgocall: the assembly function itself, by its name in the
// pclntab (the symbol table's runtime.asmcgocall can be its ABI
// wrapper, and the function is then runtime.asmcgocall.abi0 there).
func (t *Table) inAsmcgocall(ret uint64) bool {
	f, ok := t.pcln.find(ret - 1)
	return ok && t.pcln.name(f.nameOff()) == "runtime.asmcgocall"
}
