package ancestry

import (
	"errors"
	"fmt"
)

// The type descriptors' layout (internal/abi, 64-bit; the same since Go
// 1.19 but for fields past these): abi.Type is 48 bytes, its Kind_ at
// 23; a struct type's Fields slice follows its PkgPath at 56; an
// element type (pointer, slice) at 48. A StructField is its Name, Typ
// and Offset, 8 bytes each.
const (
	typeSize     = 48
	typeKind     = 23
	kindMask     = 0x1f
	kindStruct   = 25
	kindPtr      = 22
	kindSlice    = 23
	structFields = 56
	elemType     = 48
	fieldSize    = 24
)

// field is a struct field: its offset and the address of its type.
type field struct {
	off, typ uint64
}

// structType reads the struct type descriptor at addr: its fields by
// name.
func (im *image) structType(addr uint64) (map[string]field, bool) {
	kind, ok := im.bytes(addr+typeKind, 1)
	if !ok || kind[0]&kindMask != kindStruct {
		return nil, false
	}
	ptr, ok1 := im.word(addr + structFields)
	n, ok2 := im.word(addr + structFields + 8)
	if !ok1 || !ok2 || n == 0 || n > 512 {
		return nil, false
	}
	fields := make(map[string]field, n)
	for i := uint64(0); i < n; i++ {
		f := ptr + i*fieldSize
		nameAddr, ok1 := im.word(f)
		typ, ok2 := im.word(f + 8)
		off, ok3 := im.word(f + 16)
		name, ok4 := im.name(nameAddr)
		if !ok1 || !ok2 || !ok3 || !ok4 {
			return nil, false
		}
		fields[name] = field{off, typ}
	}
	return fields, true
}

// elem reads the element type of a pointer or slice type at addr.
func (im *image) elem(addr uint64, kind byte) (uint64, bool) {
	k, ok := im.bytes(addr+typeKind, 1)
	if !ok || k[0]&kindMask != kind {
		return 0, false
	}
	return im.word(addr + elemType)
}

// gFields are the fields of runtime.g a reader needs, each checked by
// name: the scan takes the struct type that has them all.
var gFields = []string{"stack", "goid", "parentGoid", "gopc", "startpc", "sched", "syscallsp", "syscallpc", "atomicstatus"}

// findG finds runtime.g's type descriptor: the struct type, of all in
// the image, whose first field is stack and that has every one of
// gFields. Type descriptors are 8-aligned.
func (im *image) findG() (map[string]field, error) {
	for _, s := range im.secs {
		for o := uint64(0); o+typeSize+24 <= uint64(len(s.data)); o += 8 {
			if s.data[o+typeKind]&kindMask != kindStruct {
				continue
			}
			fields, ok := im.structType(s.addr + o)
			if !ok || len(fields) < len(gFields) {
				continue
			}
			if st, ok := fields["stack"]; !ok || st.off != 0 {
				continue
			}
			if hasAll(fields, gFields) {
				return fields, nil
			}
			if hasAll(fields, gFields[:2]) && hasAll(fields, []string{"sched", "gopc"}) {
				return nil, errors.New("runtime.g has no parentGoid: built by Go older than 1.21")
			}
		}
	}
	return nil, errors.New("no type descriptor of runtime.g")
}

func hasAll(fields map[string]field, names []string) bool {
	for _, n := range names {
		if _, ok := fields[n]; !ok {
			return false
		}
	}
	return true
}

// offsets are where runtime.g keeps what a reader needs, and the size of
// what it reads of each g.
type offsets struct {
	stackLo, stackHi                  uint64
	goid, parentGoid, gopc, startpc   uint64
	status, syscallSP, syscallPC      uint64
	schedSP, schedPC, schedLR, schedG uint64
	// ancestors is g.ancestors (*[]ancestorInfo), 0: the runtime does
	// not have it; ancPCs, ancGoid and ancGopc are ancestorInfo's
	// fields, ancSize its size.
	ancestors, ancPCs, ancGoid, ancGopc, ancSize uint64
	// span is how much of a g to read: every offset above fits in it.
	span uint64
}

// readOffsets reads the offsets from the image's type descriptors.
func (im *image) readOffsets() (offsets, error) {
	g, err := im.findG()
	if err != nil {
		return offsets{}, err
	}
	var o offsets
	stack, ok := im.structType(g["stack"].typ)
	if !ok || !hasAll(stack, []string{"lo", "hi"}) {
		return o, errors.New("runtime.stack: unknown layout")
	}
	sched, ok := im.structType(g["sched"].typ)
	if !ok || !hasAll(sched, []string{"sp", "pc", "lr", "g"}) {
		return o, errors.New("runtime.gobuf: unknown layout")
	}
	o.stackLo, o.stackHi = stack["lo"].off, stack["hi"].off
	o.goid, o.parentGoid = g["goid"].off, g["parentGoid"].off
	o.gopc, o.startpc = g["gopc"].off, g["startpc"].off
	o.status = g["atomicstatus"].off
	o.syscallSP, o.syscallPC = g["syscallsp"].off, g["syscallpc"].off
	base := g["sched"].off
	o.schedSP, o.schedPC = base+sched["sp"].off, base+sched["pc"].off
	o.schedLR, o.schedG = base+sched["lr"].off, base+sched["g"].off
	if err := im.readAncestors(g, &o); err != nil {
		return o, err
	}
	for _, v := range []uint64{o.stackHi, o.goid, o.parentGoid, o.gopc, o.startpc, o.status,
		o.syscallSP, o.syscallPC, o.schedSP, o.schedPC, o.schedLR, o.schedG, o.ancestors} {
		o.span = max(o.span, v+8)
	}
	return o, nil
}

// readAncestors reads g.ancestors' type, *[]ancestorInfo, when the
// runtime has it.
func (im *image) readAncestors(g map[string]field, o *offsets) error {
	a, ok := g["ancestors"]
	if !ok {
		return nil
	}
	slice, ok1 := im.elem(a.typ, kindPtr)
	info, ok2 := im.elem(slice, kindSlice)
	fields, ok3 := im.structType(info)
	if !ok1 || !ok2 || !ok3 || !hasAll(fields, []string{"pcs", "goid", "gopc"}) {
		return fmt.Errorf("runtime.ancestorInfo: unknown layout")
	}
	size, ok := im.word(info)
	if !ok || size == 0 || size > 256 {
		return fmt.Errorf("runtime.ancestorInfo: unknown size")
	}
	o.ancestors, o.ancSize = a.off, size
	o.ancPCs, o.ancGoid, o.ancGopc = fields["pcs"].off, fields["goid"].off, fields["gopc"].off
	return nil
}
