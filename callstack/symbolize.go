package callstack

import (
	"encoding/binary"
	"strings"
)

// A Frame is one call on a stack: a function, and the position in it of
// the call to the next inner frame (for the innermost frame, of the
// thread's pc). Every frame a Stack holds was verified (see Unwind).
type Frame struct {
	// PC is the frame's program counter in the process: the thread's pc
	// for the innermost frame (past a system call instruction it is on,
	// as Unwind says), otherwise the return address into it.
	// The logical frames of calls inlined into one function share it.
	PC uint64
	// Func is the function's name as the runtime prints it:
	// import/path.Func, import/path.(*T).Method, import/path.F.func1,
	// import/path.G[...] (the symbol, with type arguments elided).
	// "" when the pc is in a call inlined into the function whose
	// inline tree could not be read (Func of the next frame then names
	// the function it was inlined into).
	Func string
	// Entry is the process address of the entry of the function whose
	// machine code holds PC (for an inlined call, the function it was
	// inlined into).
	Entry uint64
	// File and Line are the source position: the file's path as it was
	// compiled (absolute, or module-relative under -trimpath). Line 0:
	// unknown (the function an unnamed inlined call went into).
	File string
	Line int
	// Inlined tells that the call was inlined into the next frame's
	// function: it has no frame of its own on the stack.
	Inlined bool
}

// maxInline bounds the inline expansion of one pc.
const maxInline = 64

// symbolize appends the logical frames of the physical frame at pc (a
// process address; bias is the load bias). An innermost pc is looked
// up at pc, a return address at pc-1: at the call.
func (t *Table) symbolize(dst []Frame, f fn, pc, bias uint64, innermost bool) []Frame {
	lookup := pc - bias
	if !innermost {
		lookup--
	}
	name := printName(t.pcln.name(f.nameOff()))
	inl := f.pcdata(pcdataInlTreeIndex)
	tree, haveTree := t.inlTree(f)
	for i := 0; ; i++ {
		file, line, _ := t.sym.PCToLine(lookup)
		fr := Frame{PC: pc, Entry: f.entry + bias, File: file, Line: line}
		idx := int64(-1)
		if inl != 0 && i < maxInline {
			if v, ok := t.pcln.pcvalue(inl, f.entry, lookup); ok {
				idx = v
			}
		}
		if idx < 0 {
			fr.Func = name
			return append(dst, fr)
		}
		fr.Inlined = true
		if !haveTree || idx >= int64(len(tree)/16) {
			// The call's position is known, not its function, nor
			// the position of the call in the function it was inlined
			// into.
			return append(dst, fr, Frame{PC: pc, Entry: fr.Entry, Func: name})
		}
		e := tree[idx*16:]
		fr.Func = printName(t.pcln.name(binary.LittleEndian.Uint32(e[4:])))
		dst = append(dst, fr)
		parent := int32(binary.LittleEndian.Uint32(e[8:]))
		if parent < 0 || f.entry+uint64(parent) >= f.end {
			return dst
		}
		lookup = f.entry + uint64(parent)
	}
}

// inlTree returns f's inline tree: 16-byte runtime.inlinedCall entries.
func (t *Table) inlTree(f fn) ([]byte, bool) {
	off, ok := f.funcdataOff(funcdataInlTree)
	if !ok || t.gofunc == nil || uint64(off) >= uint64(len(t.gofunc)) {
		return nil, false
	}
	return t.gofunc[off:], true
}

// printName returns a function's symbol name as the runtime prints it:
// the type arguments of a generic function elided ("[...]").
func printName(name string) string {
	i := strings.IndexByte(name, '[')
	j := strings.LastIndexByte(name, ']')
	if i < 0 || j <= i {
		return name
	}
	return name[:i] + "[...]" + name[j+1:]
}
