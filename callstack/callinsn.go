package callstack

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// maxCallLenAMD64 is the longest amd64 call instruction: REX, FF /2,
// ModRM, SIB, disp32.
const maxCallLenAMD64 = 8

// afterCallAMD64 tells whether the bytes b, which end at a return
// address, end with a call instruction: CALL rel32 (E8) or an indirect
// CALL r/m64 (FF /2, with or without a REX prefix).
func afterCallAMD64(b []byte) bool {
	if len(b) >= 5 && b[len(b)-5] == 0xe8 {
		return true
	}
	for n := 2; n <= maxCallLenAMD64 && n <= len(b); n++ {
		if indirectCallLen(b[len(b)-n:]) == n {
			return true
		}
	}
	return false
}

// indirectCallLen returns the length of the indirect call instruction
// (FF /2) at the start of b, or 0 when b does not start with one.
func indirectCallLen(b []byte) int {
	i := 0
	if len(b) > 0 && b[0]&0xf0 == 0x40 { // REX
		i++
	}
	if len(b) < i+2 || b[i] != 0xff {
		return 0
	}
	modrm := b[i+1]
	i += 2
	if modrm>>3&7 != 2 {
		return 0
	}
	mod, rm := modrm>>6, modrm&7
	switch {
	case mod == 3:
		return i
	case rm == 4: // SIB
		if len(b) <= i {
			return 0
		}
		if mod == 0 && b[i]&7 == 5 {
			i += 4
		}
		i++
	case mod == 0 && rm == 5: // RIP-relative
		i += 4
	}
	switch mod {
	case 1:
		i++
	case 2:
		i += 4
	}
	return i
}

// isCallARM64 tells whether the arm64 instruction w is BL or BLR.
func isCallARM64(w uint32) bool {
	return w&0xfc000000 == 0x94000000 || w&0xfffffc1f == 0xd63f0000
}

// isSVCARM64 tells whether the arm64 instruction w is SVC #imm16, the
// system call.
func isSVCARM64(w uint32) bool {
	return w&0xffe0001f == 0xd4000001
}

// blTarget returns the target of the arm64 instruction w at addr when it
// is a BL.
func blTarget(w uint32, addr uint64) (uint64, bool) {
	if w&0xfc000000 != 0x94000000 {
		return 0, false
	}
	off := int64(int32(w<<6)>>6) * 4
	return addr + uint64(off), true
}

// arm64Leaf unwinds past an innermost arm64 function that has no frame
// of its own when the link register is unknown (/proc/TID/syscall does
// not give it): the syscall stub. Its caller C shares its stack pointer
// and saved its own return address at 0(sp); the instruction before
// that return address must be a BL, whose target is C's entry; C's pc
// is right after its only BL to the leaf. It returns C's frames and the
// pc and sp of C's caller.
func (t *Table) arm64Leaf(read func(uint64) (uint64, error), leaf fn, sp, bias uint64) ([]Frame, uint64, uint64, error) {
	name := t.pcln.name(leaf.nameOff())
	ret, err := read(sp)
	if err != nil {
		return nil, 0, 0, err
	}
	link := ret - bias
	if err := t.verifyReturn(link); err != nil {
		return nil, 0, 0, fmt.Errorf("return address %#x of the caller of %s: %w", ret, name, err)
	}
	b := t.code(link, 4)
	entry, ok := blTarget(binary.LittleEndian.Uint32(b), link-4)
	if !ok {
		return nil, 0, 0, fmt.Errorf("%s has no frame and its caller was called through a register: the link register is needed", name)
	}
	c, ok := t.pcln.find(entry)
	if !ok || c.entry != entry {
		return nil, 0, 0, fmt.Errorf("the call before %#x is not to a function's entry", ret)
	}
	site, err := t.onlyCallTo(c, leaf.entry)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("%s has no frame and the link register is unknown: %w", name, err)
	}
	spd, ok := t.pcln.spdelta(c, site+4)
	if !ok || spd <= 0 {
		return nil, 0, 0, fmt.Errorf("no frame size in %s", t.pcln.name(c.nameOff()))
	}
	frames := t.symbolize(nil, c, site+4+bias, bias, false)
	return frames, ret, sp + uint64(spd), nil
}

// onlyCallTo returns the address of the only BL in f to target.
func (t *Table) onlyCallTo(f fn, target uint64) (uint64, error) {
	site, n := uint64(0), 0
	for a := f.entry; a+4 <= f.end; a += 4 {
		b := t.code(a+4, 4)
		if b == nil {
			break
		}
		if to, ok := blTarget(binary.LittleEndian.Uint32(b), a); ok && to == target {
			site, n = a, n+1
		}
	}
	switch n {
	case 0:
		return 0, errors.New("its caller has no direct call to it")
	case 1:
		return site, nil
	}
	return 0, fmt.Errorf("its caller calls it from %d places", n)
}
