package bpf

import (
	"fmt"

	"golang.org/x/net/bpf"
)

// label names a position in an asm program. Label 0 means "the next
// instruction" (fall through).
type label int

const next label = 0

// jumpRef records a conditional jump whose targets are labels.
type jumpRef struct {
	index      int
	onTrue     label
	onFalse    label
	descriptor string
}

// asm is a tiny forward-only assembler with labels, for the hand-written
// parts of the program. Classic BPF conditional jumps reach at most 255
// instructions ahead; resolve fails rather than silently mis-jump.
type asm struct {
	insns  []bpf.Instruction
	jumps  []jumpRef
	at     map[label]int
	labels label
	rets   map[uint32]label // return instructions asked for by retTo
	order  []uint32         // the values of rets, in first-asked order
}

func newAsm() *asm { return &asm{at: map[label]int{}, rets: map[uint32]label{}} }

func (a *asm) newLabel() label {
	a.labels++
	return a.labels
}

// mark places l at the next instruction.
func (a *asm) mark(l label) { a.at[l] = len(a.insns) }

func (a *asm) emit(insns ...bpf.Instruction) { a.insns = append(a.insns, insns...) }

// load loads the 32-bit word at offset off of seccomp_data into A.
func (a *asm) load(off uint32) { a.emit(bpf.LoadAbsolute{Off: off, Size: 4}) }

func (a *asm) ret(v uint32) { a.emit(bpf.RetConstant{Val: v}) }

// retTo returns the label of a shared "return v", placed by placeRets.
func (a *asm) retTo(v uint32) label {
	if l, ok := a.rets[v]; ok {
		return l
	}
	l := a.newLabel()
	a.rets[v], a.order = l, append(a.order, v)
	return l
}

// placeRets emits every return asked for by retTo so far.
func (a *asm) placeRets() {
	for _, v := range a.order {
		a.mark(a.rets[v])
		a.ret(v)
	}
	a.order = nil
}

// goTo emits an unconditional jump to l (a conditional one with both
// targets l, which resolve checks like any other).
func (a *asm) goTo(l label) { a.jump(bpf.JumpEqual, 0, l, l) }

// jump emits "if A <cond> val goto onTrue else goto onFalse".
func (a *asm) jump(cond bpf.JumpTest, val uint32, onTrue, onFalse label) {
	a.jumps = append(a.jumps, jumpRef{index: len(a.insns), onTrue: onTrue, onFalse: onFalse,
		descriptor: fmt.Sprintf("%v %#x", cond, val)})
	a.emit(bpf.JumpIf{Cond: cond, Val: val})
}

// resolve fills in every jump's skips and returns the instructions.
func (a *asm) resolve() ([]bpf.Instruction, error) {
	for _, j := range a.jumps {
		in := a.insns[j.index].(bpf.JumpIf)
		var err error
		if in.SkipTrue, err = a.skip(j, j.onTrue); err != nil {
			return nil, err
		}
		if in.SkipFalse, err = a.skip(j, j.onFalse); err != nil {
			return nil, err
		}
		a.insns[j.index] = in
	}
	return a.insns, nil
}

func (a *asm) skip(j jumpRef, l label) (uint8, error) {
	if l == next {
		return 0, nil
	}
	dest, ok := a.at[l]
	if !ok {
		return 0, fmt.Errorf("jump %d (%s) to unplaced label %d", j.index, j.descriptor, l)
	}
	n := dest - j.index - 1
	if n < 0 || n > 255 {
		return 0, fmt.Errorf("jump %d (%s) to label %d: skip %d out of range", j.index, j.descriptor, l, n)
	}
	return uint8(n), nil
}
