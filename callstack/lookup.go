package callstack

// FuncCode returns the machine code of the function named name (as the
// symbol table spells it, runtime.forEachG) and its link-time entry
// address: what a reader of the runtime's own data (package ancestry)
// disassembles to find a variable the executable does not name.
func (t *Table) FuncCode(name string) (entry uint64, code []byte, ok bool) {
	f := t.sym.LookupFunc(name)
	if f == nil || f.End <= f.Entry || f.Entry < t.textAddr {
		return 0, nil, false
	}
	o, e := f.Entry-t.textAddr, f.End-t.textAddr
	if e > uint64(len(t.text)) {
		return 0, nil, false
	}
	return f.Entry, t.text[o:e], true
}

// Callers symbolizes the pcs the runtime records of a stack
// (runtime.Callers, runtime.ancestorInfo.pcs: outermost last, one per
// logical frame, a call inlined into its caller included, each the
// frame's pc plus one): one Frame per pc, looked up at pc-1. An address
// in no known function ends the list.
func (t *Table) Callers(pcs []uint64, bias uint64) []Frame {
	var frames []Frame
	for _, pc := range pcs {
		f, ok := t.pcln.find(pc - bias - 1)
		if !ok {
			break
		}
		logical := t.symbolize(nil, f, pc, bias, false)
		frames = append(frames, logical[0])
	}
	return frames
}

// IsGoexit tells whether pc (a process address) is the return address
// the runtime puts under a goroutine's first function: a list of
// return addresses that ends there is a whole stack.
func (t *Table) IsGoexit(pc, bias uint64) bool {
	return t.isGoexitReturn(pc - bias)
}
