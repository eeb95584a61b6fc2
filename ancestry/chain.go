package ancestry

import (
	"encoding/binary"
	"fmt"
	"io"
	"strconv"

	"github.com/nettrap/nettrap/callstack"
)

// MaxDepth bounds a chain, in creators.
const MaxDepth = 8

// A Chain is what the runtime shows of who created a goroutine.
type Chain struct {
	// Goroutine is the calling goroutine's id.
	Goroutine uint64
	// GoStatement is the go statement that started it (in Creators[0]'s
	// code), from the runtime's gopc; its Func is "" when unknown.
	GoStatement callstack.Frame
	// Creators are its creators, nearest first: Creators[0] ran the go
	// statement that started it.
	Creators []Creator
	// End says why the chain ends: "" when it reached the main
	// goroutine or MaxDepth, otherwise what could not be known of the
	// next creator (it exited and the runtime kept no ancestors).
	End string
}

// A Creator is a goroutine that created the next one of a chain.
type Creator struct {
	ID uint64
	// Stack is its stack: at the go statement (Saved; as the runtime
	// kept it for tracebackancestors, at most 50 frames), or now (it
	// lives and was not running: the outermost frames, which say whose
	// goroutine it is, do not change while it lives). nil: unknown (it
	// was running on another thread).
	Stack *callstack.Stack
	Saved bool
	// Live tells that the creator still lives (its goid is among the
	// process's goroutines): false for one that has exited, known only
	// from the stack the runtime kept.
	Live bool
	// GoStatement is the go statement that started this one.
	GoStatement callstack.Frame
}

// Read reads the chain of the goroutine whose stack holds sp (the
// calling thread's, held in the kernel) in a process running the
// layout's executable: mem reads its memory, bias is its load bias.
func (l *Layout) Read(mem io.ReaderAt, bias, sp uint64) (*Chain, error) {
	r := &reader{l: l, mem: mem, bias: bias}
	gs, err := r.all()
	if err != nil {
		return nil, fmt.Errorf("ancestry: %w", err)
	}
	byID := make(map[uint64]*goroutine, len(gs))
	var caller *goroutine
	for i := range gs {
		g := &gs[i]
		if g.status&^gScan == gDead {
			continue
		}
		byID[g.id] = g
		if g.stackLo <= sp && sp < g.stackHi {
			caller = g
		}
	}
	if caller == nil {
		return nil, fmt.Errorf("ancestry: no goroutine's stack holds sp %#x", sp)
	}
	c := &Chain{Goroutine: caller.id, GoStatement: r.frame(caller.gopc)}
	next := caller
	if caller.ancestors != 0 {
		saved, err := r.ancestors(caller.ancestors)
		if err != nil {
			c.End = err.Error()
			return c, nil
		}
		for _, a := range saved {
			cr := Creator{ID: a.id, Stack: a.stack, Saved: true, Live: byID[a.id] != nil}
			if a.id != 1 {
				cr.GoStatement = r.frame(a.gopc)
			}
			c.Creators = append(c.Creators, cr)
		}
		if len(saved) > 0 {
			last := saved[len(saved)-1].id
			if next = byID[last]; next == nil {
				c.End = "goroutine " + strconv.FormatUint(last, 10) + "'s creator is not known"
				return c, nil
			}
		}
	}
	for len(c.Creators) < MaxDepth && next.parent != 0 {
		p := byID[next.parent]
		if p == nil {
			c.End = "goroutine " + strconv.FormatUint(next.parent, 10) + " has exited"
			return c, nil
		}
		cr := Creator{ID: p.id, Live: true}
		if p.id != 1 {
			// (Not for the main goroutine: no go statement started
			// it, its gopc is in the runtime's start-up code.)
			cr.GoStatement = r.frame(p.gopc)
		}
		if p.status&gScan == 0 && p.regs.SP != 0 {
			cr.Stack = l.tab.Unwind(mem, bias, p.regs)
		}
		c.Creators = append(c.Creators, cr)
		next = p
	}
	return c, nil
}

// frame symbolizes a go statement's pc (gopc: the return address of its
// call to runtime.newproc); the zero Frame when unknown.
func (r *reader) frame(gopc uint64) callstack.Frame {
	if gopc == 0 {
		return callstack.Frame{}
	}
	if f := r.l.tab.Callers([]uint64{gopc}, r.bias); len(f) == 1 {
		return f[0]
	}
	return callstack.Frame{}
}

// saved is one runtime.ancestorInfo.
type saved struct {
	id, gopc uint64
	stack    *callstack.Stack
}

// ancestors reads the *[]ancestorInfo at ptr.
func (r *reader) ancestors(ptr uint64) ([]saved, error) {
	o := r.l.off
	base, err := r.word(ptr)
	if err != nil {
		return nil, err
	}
	n, err := r.word(ptr + 8)
	if err != nil || n > 1024 {
		return nil, fmt.Errorf("ancestors: bad length")
	}
	out := make([]saved, 0, n)
	for i := uint64(0); i < n; i++ {
		a := base + i*o.ancSize
		b := make([]byte, o.ancSize)
		if _, err := r.mem.ReadAt(b, int64(a)); err != nil {
			return nil, fmt.Errorf("reading ancestors: %w", err)
		}
		w := func(off uint64) uint64 { return binary.LittleEndian.Uint64(b[off:]) }
		pcs, npcs := w(o.ancPCs), w(o.ancPCs+8)
		if npcs > 1024 {
			return nil, fmt.Errorf("ancestors: bad pcs")
		}
		raw := make([]byte, 8*npcs)
		if _, err := r.mem.ReadAt(raw, int64(pcs)); err != nil {
			return nil, fmt.Errorf("reading ancestors: %w", err)
		}
		out = append(out, saved{id: w(o.ancGoid), gopc: w(o.ancGopc), stack: r.savedStack(raw)})
	}
	return out, nil
}

// tracebackInnerFrames is how many pcs the runtime saves of an
// ancestor's stack: a list that long may have been cut.
const tracebackInnerFrames = 50

// savedStack symbolizes the pcs the runtime saved (tracebackPCs: one per
// logical frame, inlined calls included, each the frame's pc plus one).
func (r *reader) savedStack(raw []byte) *callstack.Stack {
	n := len(raw) / 8
	pcs := make([]uint64, 0, n)
	for i := 0; i < n; i++ {
		pcs = append(pcs, binary.LittleEndian.Uint64(raw[8*i:]))
	}
	s := &callstack.Stack{Frames: r.l.tab.Callers(pcs, r.bias)}
	if k := len(s.Frames); k > 0 && s.Frames[k-1].Func == "runtime.goexit" {
		s.Frames, s.Complete = s.Frames[:k-1], true
	} else if len(s.Frames) == n && n < tracebackInnerFrames {
		s.Complete = true
	} else {
		s.Stop = "the runtime kept " + strconv.Itoa(n) + " frames"
	}
	return s
}
