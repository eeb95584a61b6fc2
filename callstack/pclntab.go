package callstack

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// go120Magic is the magic number of the Go 1.20+ pclntab header
// (internal/abi.Go120PCLnTabMagic): the only layout this package reads.
const go120Magic = 0xfffffff1

// funcHeaderSize is the size of runtime._func before its pcdata and
// funcdata arrays: ten 32-bit fields and four bytes.
const funcHeaderSize = 44

// The pcdata and funcdata indices this package reads (internal/abi).
const (
	pcdataInlTreeIndex = 2
	funcdataInlTree    = 3
)

// pclntab is a Go 1.20+ .gopclntab, little-endian, read where the
// standard library's debug/gosym stops: the frame size table (pcsp),
// pcdata, funcdata and the names of inlined functions. Addresses are
// link-time addresses.
type pclntab struct {
	quantum     uint64
	ptrSize     int
	nfunc       int
	textStart   uint64
	funcnametab []byte
	pctab       []byte
	funcdata    []byte // the pclntable: functab, then the _func structs
	ftab        []byte // nfunc*2+1 uint32: entry offset, _func offset; last: end
}

// fn is one function of a pclntab: its _func struct.
type fn struct {
	entry uint64
	end   uint64
	b     []byte // the _func struct, its pcdata and funcdata arrays
}

var errPclntab = errors.New("malformed .gopclntab")

// parsePclntab reads the header of a .gopclntab whose functions start
// at textStart (the address of the text section).
func parsePclntab(data []byte, textStart uint64) (*pclntab, error) {
	if len(data) < 8 {
		return nil, errPclntab
	}
	if m := binary.LittleEndian.Uint32(data); m != go120Magic {
		if binary.BigEndian.Uint32(data) == go120Magic {
			return nil, errors.New("big-endian .gopclntab: not supported")
		}
		return nil, fmt.Errorf("unsupported .gopclntab layout (magic %#x): built by Go older than 1.20", m)
	}
	if data[4] != 0 || data[5] != 0 {
		return nil, errPclntab
	}
	t := &pclntab{quantum: uint64(data[6]), ptrSize: int(data[7]), textStart: textStart}
	if t.quantum != 1 && t.quantum != 2 && t.quantum != 4 || t.ptrSize != 8 {
		return nil, fmt.Errorf("%w: pc quantum %d, pointer size %d", errPclntab, t.quantum, t.ptrSize)
	}
	word := func(i int) (uint64, bool) {
		o := 8 + i*t.ptrSize
		if o+8 > len(data) {
			return 0, false
		}
		return binary.LittleEndian.Uint64(data[o:]), true
	}
	section := func(i int) ([]byte, bool) {
		o, ok := word(i)
		if !ok || o > uint64(len(data)) {
			return nil, false
		}
		return data[o:], true
	}
	n, ok := word(0)
	if !ok || n > uint64(len(data)) {
		return nil, errPclntab
	}
	t.nfunc = int(n)
	var ok1, ok2, ok3 bool
	t.funcnametab, ok1 = section(3)
	t.pctab, ok2 = section(6)
	t.funcdata, ok3 = section(7)
	if !ok1 || !ok2 || !ok3 {
		return nil, errPclntab
	}
	size := (t.nfunc*2 + 1) * 4
	if size > len(t.funcdata) {
		return nil, errPclntab
	}
	t.ftab = t.funcdata[:size]
	return t, nil
}

func (t *pclntab) ftabEntry(i int) uint32 {
	return binary.LittleEndian.Uint32(t.ftab[i*4:])
}

// find returns the function holding pc (a link-time address).
func (t *pclntab) find(pc uint64) (fn, bool) {
	if pc < t.textStart || t.nfunc == 0 {
		return fn{}, false
	}
	off := pc - t.textStart
	if off >= uint64(t.ftabEntry(2*t.nfunc)) {
		return fn{}, false
	}
	// The last function whose entry is at or below off.
	lo, hi := 0, t.nfunc
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if uint64(t.ftabEntry(2*m)) <= off {
			lo = m + 1
		} else {
			hi = m
		}
	}
	i := lo - 1
	if i < 0 {
		return fn{}, false
	}
	fo := uint64(t.ftabEntry(2*i + 1))
	if fo+funcHeaderSize > uint64(len(t.funcdata)) {
		return fn{}, false
	}
	b := t.funcdata[fo:]
	f := fn{
		entry: t.textStart + uint64(t.ftabEntry(2*i)),
		end:   t.textStart + uint64(t.ftabEntry(2*i+2)),
		b:     b,
	}
	if binary.LittleEndian.Uint32(b) != t.ftabEntry(2*i) {
		return fn{}, false
	}
	return f, true
}

func (f fn) field(i int) uint32 { return binary.LittleEndian.Uint32(f.b[4*i:]) }

func (f fn) nameOff() uint32 { return f.field(1) }
func (f fn) pcsp() uint32    { return f.field(4) }
func (f fn) npcdata() uint32 { return f.field(7) }
func (f fn) nfuncdata() int  { return int(f.b[43]) }

// pcdata returns the offset in pctab of pcdata table i; 0: none.
func (f fn) pcdata(i int) uint32 {
	if uint32(i) >= f.npcdata() || funcHeaderSize+4*(i+1) > len(f.b) {
		return 0
	}
	return binary.LittleEndian.Uint32(f.b[funcHeaderSize+4*i:])
}

// funcdataOff returns funcdata i, an offset from the module's gofunc;
// false: none.
func (f fn) funcdataOff(i int) (uint32, bool) {
	if i >= f.nfuncdata() {
		return 0, false
	}
	o := funcHeaderSize + 4*int(f.npcdata()) + 4*i
	if o+4 > len(f.b) || f.npcdata() > uint32(len(f.b)) {
		return 0, false
	}
	v := binary.LittleEndian.Uint32(f.b[o:])
	return v, v != ^uint32(0)
}

// name returns the name at offset off in funcnametab.
func (t *pclntab) name(off uint32) string {
	if uint64(off) >= uint64(len(t.funcnametab)) {
		return ""
	}
	b := t.funcnametab[off:]
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// spdelta returns the frame size of f at pc: how far the stack pointer
// is below its value at the function's entry; false when the table has
// no value for pc.
func (t *pclntab) spdelta(f fn, pc uint64) (int64, bool) {
	return t.pcvalue(f.pcsp(), f.entry, pc)
}

// pcvalue decodes the pc-value table at off in pctab for a function
// starting at entry and returns the value at target.
func (t *pclntab) pcvalue(off uint32, entry, target uint64) (int64, bool) {
	if off == 0 || uint64(off) >= uint64(len(t.pctab)) {
		return 0, false
	}
	return decodePCValue(t.pctab[off:], t.quantum, entry, target)
}

// decodePCValue walks an encoded pc-value table (pairs of varints: the
// value delta, zigzag-encoded, then the pc delta in units of quantum,
// ending with a zero value delta after the first pair) from entry and
// returns the value in force at target.
func decodePCValue(p []byte, quantum, entry, target uint64) (int64, bool) {
	if target < entry {
		return 0, false
	}
	val := int64(-1)
	pc := entry
	for first := true; ; first = false {
		uv, n := binary.Uvarint(p)
		if n <= 0 {
			return 0, false
		}
		p = p[n:]
		if uv == 0 && !first {
			return 0, false
		}
		if uv&1 != 0 {
			val += -int64(uv>>1) - 1
		} else {
			val += int64(uv >> 1)
		}
		d, n := binary.Uvarint(p)
		if n <= 0 {
			return 0, false
		}
		p = p[n:]
		pc += d * quantum
		if target < pc {
			return val, true
		}
		if pc < entry { // overflow
			return 0, false
		}
	}
}
