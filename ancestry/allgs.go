package ancestry

import (
	"encoding/binary"
	"errors"

	"golang.org/x/arch/x86/x86asm"

	"github.com/nettrap/nettrap/callstack"
)

// findAllgs finds the link-time address of runtime.allgs (a []*g) in
// the code of runtime.forEachG:
//
//	lock(&allglock)
//	for _, gp := range allgs { ... }
//
// Its first data reference past the first call (lock's) is allgs: the
// compiler loads the slice's pointer and length from it. The address is
// checked against the process when it is used (allgs[0] is goid 1).
func findAllgs(tab *callstack.Table) (uint64, error) {
	entry, code, ok := tab.FuncCode("runtime.forEachG")
	if !ok {
		return 0, errors.New("no runtime.forEachG in the executable")
	}
	var addr uint64
	switch tab.Arch {
	case callstack.AMD64:
		addr, ok = allgsAMD64(entry, code)
	case callstack.ARM64:
		addr, ok = allgsARM64(entry, code)
	}
	if !ok {
		return 0, errors.New("runtime.forEachG: no reference to allgs after its first call")
	}
	return addr, nil
}

// allgsAMD64 returns the first RIP-relative memory operand after the
// first CALL.
func allgsAMD64(pc uint64, code []byte) (uint64, bool) {
	called := false
	for len(code) > 0 {
		in, err := x86asm.Decode(code, 64)
		if err != nil {
			return 0, false
		}
		next := pc + uint64(in.Len)
		if in.Op == x86asm.CALL {
			called = true
		} else if called {
			for _, a := range in.Args {
				if m, ok := a.(x86asm.Mem); ok && m.Base == x86asm.RIP {
					return uint64(int64(next) + m.Disp), true
				}
			}
		}
		code, pc = code[in.Len:], next
	}
	return 0, false
}

// allgsARM64 returns the first address an ADRP forms after the first BL,
// with the low bits the next instruction on the same register adds (ADD
// immediate) or loads at (LDR or LDP, unsigned or signed offset).
func allgsARM64(pc uint64, code []byte) (uint64, bool) {
	called := false
	for i := 0; i+8 <= len(code); i += 4 {
		in := binary.LittleEndian.Uint32(code[i:])
		at := pc + uint64(i)
		switch {
		case in&0xfc000000 == 0x94000000: // BL
			called = true
		case called && in&0x9f000000 == 0x90000000: // ADRP
			rd := in & 31
			immlo := uint64(in>>29) & 3
			immhi := uint64(in>>5) & 0x7ffff
			off := int64((immhi<<2|immlo)<<44) >> 32 // sign-extended, times 4096
			page := uint64(int64(at&^0xfff) + off)
			lo, ok := arm64Low(binary.LittleEndian.Uint32(code[i+4:]), rd)
			return page + lo, ok
		}
	}
	return 0, false
}

// arm64Low decodes the low bits of an address that in adds to, or loads
// at, register rd.
func arm64Low(in, rd uint32) (uint64, bool) {
	if (in>>5)&31 != rd {
		return 0, false
	}
	switch {
	case in&0xff800000 == 0x91000000: // ADD Xd, Xn, #imm12 (no shift)
		return uint64(in>>10) & 0xfff, true
	case in&0xffc00000 == 0xf9400000: // LDR Xt, [Xn, #imm12*8]
		return (uint64(in>>10) & 0xfff) * 8, true
	case in&0xffc00000 == 0xa9400000: // LDP Xt1, Xt2, [Xn, #imm7*8]
		imm := int64(in>>15&0x7f) << 57 >> 57
		return uint64(imm * 8), imm >= 0
	}
	return 0, false
}
