package bpf

import (
	"fmt"
	"slices"

	"golang.org/x/net/bpf"
)

// argRule is one row of an argument table (argtable.go): a call of sys
// on one of abis whose arguments pass every check gets ret. The rows of
// one syscall are tried in table order and the first that matches
// decides; a call that matches none goes to the block's otherwise label
// (see ruleBlocks.emit). A row with no checks always matches.
type argRule struct {
	sys    string   // syscall name, as Kind.String spells it ("socket", "setsockopt", …)
	abis   abiClass // the ABIs whose calls the row decides
	checks []argCheck
	ret    uint32 // the action returned on a match
}

// abiClass selects the ABIs of a target a rule applies to.
type abiClass uint8

const (
	// nativeABI is the target's 64-bit ABI (x86_64, aarch64).
	nativeABI abiClass = 1 << iota
	// foreignABI is its 32-bit compat ABI (i386, arm) and x32: their
	// longs and pointers are 32 bits wide.
	foreignABI
	anyABI = nativeABI | foreignABI
)

// argWord says which bits of a 64-bit argument register a check reads.
type argWord uint8

const (
	// lo is the low 32 bits: a C int or unsigned int (the kernel
	// ignores the high half of the register), or a 32-bit ABI's long.
	lo argWord = iota
	// hi is the high 32 bits alone.
	hi
	// full is all 64 bits: a native long or pointer. Only values, no
	// mask, ranges or bits.
	full
)

// argCheck is one condition on one argument: it holds when the word
// read (and masked) is one of values, or in one of ranges, or has one of
// bits set; with not, when it is none of these. A check with nothing to
// compare never holds (always, with not).
type argCheck struct {
	arg    uint32 // argument index, 0..5
	word   argWord
	mask   uint32      // lo, hi: when not 0, the word is ANDed with mask first
	values []uint64    // 32-bit values for lo and hi, 64-bit for full
	ranges [][2]uint32 // lo, hi: inclusive ranges
	bits   uint32      // lo, hi: holds if any of these bits is set
	not    bool
}

// empty tells whether c has nothing to compare.
func (c argCheck) empty() bool { return len(c.values) == 0 && len(c.ranges) == 0 && c.bits == 0 }

func (c argCheck) validate() error {
	if c.arg > 5 {
		return fmt.Errorf("argument %d: a syscall has 6", c.arg)
	}
	switch c.word {
	case lo, hi:
		for _, v := range c.values {
			if v > 0xffffffff {
				return fmt.Errorf("argument %d: value %#x does not fit a 32-bit word", c.arg, v)
			}
		}
		for _, r := range c.ranges {
			if r[0] > r[1] {
				return fmt.Errorf("argument %d: empty range %#x-%#x", c.arg, r[0], r[1])
			}
		}
	case full:
		if c.mask != 0 || len(c.ranges) > 0 || c.bits != 0 {
			return fmt.Errorf("argument %d: a 64-bit check takes values only", c.arg)
		}
	default:
		return fmt.Errorf("argument %d: unknown word %d", c.arg, c.word)
	}
	return nil
}

// ruleBlocks are the blocks of an argument table: one for each syscall
// and side (native, foreign) that has rows, shared by both sides when
// they have the same rows. native and foreign give the blocks' labels by
// syscall name, for the dispatch to jump to with any A: every block loads
// what it compares.
type ruleBlocks struct {
	native, foreign map[string]label
	blocks          []ruleBlock
}

type ruleBlock struct {
	at   label
	sys  string
	rows []argRule
}

// planRuleBlocks groups rules into blocks and names them, so that the
// dispatch, emitted first, can jump to them.
func planRuleBlocks(a *asm, rules []argRule) ruleBlocks {
	b := ruleBlocks{native: map[string]label{}, foreign: map[string]label{}}
	var syscalls []string
	for _, r := range rules {
		if !slices.Contains(syscalls, r.sys) {
			syscalls = append(syscalls, r.sys)
		}
	}
	for _, sys := range syscalls {
		var nat, forn []argRule
		var natIdx, fornIdx []int
		for i, r := range rules {
			if r.sys != sys {
				continue
			}
			if r.abis&nativeABI != 0 {
				nat, natIdx = append(nat, r), append(natIdx, i)
			}
			if r.abis&foreignABI != 0 {
				forn, fornIdx = append(forn, r), append(fornIdx, i)
			}
		}
		if len(nat) > 0 {
			b.native[sys] = a.newLabel()
			b.blocks = append(b.blocks, ruleBlock{b.native[sys], sys, nat})
		}
		switch {
		case len(forn) == 0:
		case slices.Equal(natIdx, fornIdx):
			b.foreign[sys] = b.native[sys]
		default:
			b.foreign[sys] = a.newLabel()
			b.blocks = append(b.blocks, ruleBlock{b.foreign[sys], sys, forn})
		}
	}
	return b
}

// emit emits every block; a call that no row matches goes to otherwise.
// The returns are shared: the caller places them with a.placeRets.
func (b ruleBlocks) emit(a *asm, otherwise label) error {
	for _, blk := range b.blocks {
		if err := emitBlock(a, blk.at, blk.rows, otherwise); err != nil {
			return fmt.Errorf("rules of %s: %w", blk.sys, err)
		}
	}
	return nil
}

// emitBlock places at and emits the rows of one syscall in order.
func emitBlock(a *asm, at label, rules []argRule, otherwise label) error {
	a.mark(at)
	for i, r := range rules {
		for _, c := range r.checks {
			if err := c.validate(); err != nil {
				return err
			}
		}
		checks, never := effectiveChecks(r.checks)
		if never {
			continue // a row that cannot match costs nothing
		}
		if len(checks) == 0 {
			a.ret(r.ret) // the rows after it are unreachable
			return nil
		}
		miss := otherwise
		if i < len(rules)-1 {
			miss = a.newLabel()
		}
		for j, c := range checks {
			if j == len(checks)-1 {
				emitCheck(a, c, a.retTo(r.ret), miss)
				break
			}
			pass := a.newLabel()
			emitCheck(a, c, pass, miss)
			a.mark(pass)
		}
		if miss == otherwise {
			return nil
		}
		a.mark(miss)
	}
	// The rows left nothing that goes to otherwise: the last could not
	// match, or there was none.
	a.goTo(otherwise)
	return nil
}

// effectiveChecks drops the checks that always hold (an empty set, not);
// never is true when one never holds (an empty set).
func effectiveChecks(cs []argCheck) (checks []argCheck, never bool) {
	for _, c := range cs {
		switch {
		case c.empty() && c.not:
		case c.empty():
			return nil, true
		default:
			checks = append(checks, c)
		}
	}
	return checks, false
}

// emitCheck emits c: it jumps to yes when c holds and to no when not.
func emitCheck(a *asm, c argCheck, yes, no label) {
	if c.not {
		yes, no = no, yes
	}
	if c.word == full {
		emitCheck64(a, c.arg, c.values, yes, no)
		return
	}
	off := argLo(c.arg)
	if c.word == hi {
		off += 4
	}
	a.load(off)
	if c.mask != 0 {
		a.emit(bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: c.mask})
	}
	type cmp struct {
		cond bpf.JumpTest
		val  uint32
		hi   uint32 // the range's last value, for JumpGreaterOrEqual
	}
	var cmps []cmp
	for _, v := range c.values {
		cmps = append(cmps, cmp{cond: bpf.JumpEqual, val: uint32(v)})
	}
	for _, r := range c.ranges {
		cmps = append(cmps, cmp{cond: bpf.JumpGreaterOrEqual, val: r[0], hi: r[1]})
	}
	if c.bits != 0 {
		cmps = append(cmps, cmp{cond: bpf.JumpBitsSet, val: c.bits})
	}
	for i, m := range cmps {
		onFalse := next
		if i == len(cmps)-1 {
			onFalse = no
		}
		if m.cond != bpf.JumpGreaterOrEqual {
			a.jump(m.cond, m.val, yes, onFalse)
			continue
		}
		past := a.newLabel()
		if onFalse != next {
			past = onFalse
		}
		a.jump(bpf.JumpGreaterOrEqual, m.val, next, past)
		a.jump(bpf.JumpGreaterThan, m.hi, past, yes)
		if past != onFalse {
			a.mark(past)
		}
	}
}

// emitCheck64 emits "goto yes if argument arg is one of the 64-bit vals,
// else goto no": the high word first, then the low words of the values
// with that high word.
func emitCheck64(a *asm, arg uint32, vals []uint64, yes, no label) {
	var his []uint32
	los := map[uint32][]uint32{}
	for _, v := range vals {
		h := uint32(v >> 32)
		if _, ok := los[h]; !ok {
			his = append(his, h)
		}
		los[h] = append(los[h], uint32(v))
	}
	at := make([]label, len(his))
	a.load(argLo(arg) + 4)
	for i, h := range his {
		at[i] = a.newLabel()
		onFalse := next
		if i == len(his)-1 {
			onFalse = no
		}
		a.jump(bpf.JumpEqual, h, at[i], onFalse)
	}
	for i, h := range his {
		a.mark(at[i])
		a.load(argLo(arg))
		for j, l := range los[h] {
			onFalse := next
			if j == len(los[h])-1 {
				onFalse = no
			}
			a.jump(bpf.JumpEqual, l, yes, onFalse)
		}
	}
}
