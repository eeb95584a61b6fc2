package callstack

import (
	"encoding/binary"
	"io"
	"testing"
)

func TestDecodePCValue(t *testing.T) {
	// Values 0 until +4, 8 until +12, 0 until +14: zigzag deltas 0, +8,
	// -8 with pc deltas 4, 8, 2 (quantum 1).
	table := []byte{0x02, 4, 0x10, 8, 0x0f, 2, 0}
	for _, c := range []struct {
		pc   uint64
		want int64
		ok   bool
	}{
		{0x100, 0, true}, {0x103, 0, true}, {0x104, 8, true}, {0x10b, 8, true},
		{0x10c, 0, true}, {0x10d, 0, true}, {0x10e, 0, false}, {0xff, 0, false},
	} {
		got, ok := decodePCValue(table, 1, 0x100, c.pc)
		if got != c.want || ok != c.ok {
			t.Errorf("pc %#x: %d %v, want %d %v", c.pc, got, ok, c.want, c.ok)
		}
	}
	// The same with quantum 4 (arm64): pc deltas count instructions.
	if got, ok := decodePCValue(table, 4, 0x100, 0x100+4*4); got != 8 || !ok {
		t.Errorf("quantum 4: %d %v", got, ok)
	}
}

func FuzzDecodePCValue(f *testing.F) {
	f.Add([]byte{0x02, 4, 0x10, 8, 0x0f, 2, 0}, uint8(1), uint64(0x100), uint64(0x105))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, uint8(4), uint64(0), ^uint64(0))
	f.Fuzz(func(t *testing.T, p []byte, q uint8, entry, target uint64) {
		v, ok := decodePCValue(p, uint64(q%5), entry, target)
		if !ok && v != 0 {
			t.Fatalf("value %d without a value", v)
		}
	})
}

// FuzzPclntab reads a garbage table the way an unwind does: it must
// never panic.
func FuzzPclntab(f *testing.F) {
	good := make([]byte, 8+8*8+64)
	binary.LittleEndian.PutUint32(good, go120Magic)
	good[6], good[7] = 1, 8
	binary.LittleEndian.PutUint64(good[8:], 1)       // nfunc
	binary.LittleEndian.PutUint64(good[8+3*8:], 72)  // funcnametab
	binary.LittleEndian.PutUint64(good[8+6*8:], 72)  // pctab
	binary.LittleEndian.PutUint64(good[8+7*8:], 100) // functab
	f.Add(good, uint64(0x401000), uint32(0x10))
	f.Fuzz(func(t *testing.T, data []byte, text uint64, off uint32) {
		p, err := parsePclntab(data, text)
		if err != nil {
			return
		}
		for _, pc := range []uint64{text, text + uint64(off), text + uint64(off)*3, text - 1} {
			fn, ok := p.find(pc)
			if !ok {
				continue
			}
			p.name(fn.nameOff())
			p.spdelta(fn, pc)
			p.pcvalue(fn.pcdata(pcdataInlTreeIndex), fn.entry, pc)
			fn.funcdataOff(funcdataInlTree)
		}
	})
}

// FuzzUnwind unwinds garbage stacks from garbage pcs with the tables of
// this test binary: the walk must end, without a panic, every frame in
// a function.
func FuzzUnwind(f *testing.F) {
	tab := selfTable(f)
	f.Add(uint32(0x1000), []byte{1, 2, 3, 4, 5, 6, 7, 8}, uint64(0))
	ret := make([]byte, 64)
	binary.LittleEndian.PutUint64(ret[8:], tab.goexit.entry+1)
	f.Add(uint32(0x2000), ret, uint64(0x10))
	f.Fuzz(func(t *testing.T, pcOff uint32, stack []byte, lr uint64) {
		const sp = 0x10000
		pc := tab.textAddr + uint64(pcOff)%uint64(len(tab.text)+64)
		s := tab.Unwind(bytesMemory{sp, stack}, 0, Regs{PC: pc, SP: sp, LR: lr})
		if len(s.Frames) > MaxFrames*maxInline || s.Complete == (s.Stop != "") {
			t.Fatalf("%d frames, complete %v, stop %q", len(s.Frames), s.Complete, s.Stop)
		}
		for _, fr := range s.Frames {
			if fr.PC <= fr.Entry && fr.PC != pc {
				t.Fatalf("frame %+v", fr)
			}
		}
	})
}

// bytesMemory is a stack at base.
type bytesMemory struct {
	base uint64
	b    []byte
}

func (m bytesMemory) ReadAt(p []byte, off int64) (int, error) {
	o := uint64(off) - m.base
	if uint64(off) < m.base || o+uint64(len(p)) > uint64(len(m.b)) {
		return 0, io.ErrUnexpectedEOF
	}
	return copy(p, m.b[o:]), nil
}
