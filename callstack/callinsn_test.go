package callstack

import (
	"encoding/binary"
	"runtime"
	"testing"
)

func TestAfterCallAMD64(t *testing.T) {
	pad := []byte{0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90}
	for _, c := range []struct {
		name string
		insn []byte
		want bool
	}{
		{"CALL rel32", []byte{0xe8, 0x10, 0x20, 0x30, 0x40}, true},
		{"CALL AX", []byte{0xff, 0xd0}, true},
		{"CALL R11", []byte{0x41, 0xff, 0xd3}, true},
		{"CALL (DX)", []byte{0xff, 0x12}, true},
		{"CALL 8(DX)", []byte{0xff, 0x52, 0x08}, true},
		{"CALL 0x100(DX)", []byte{0xff, 0x92, 0x00, 0x01, 0x00, 0x00}, true},
		{"CALL (SP)", []byte{0xff, 0x14, 0x24}, true},
		{"CALL 8(SP)", []byte{0xff, 0x54, 0x24, 0x08}, true},
		{"CALL rip-relative", []byte{0xff, 0x15, 0x10, 0x20, 0x30, 0x00}, true},
		{"CALL abs32 via SIB", []byte{0xff, 0x14, 0x25, 0x10, 0x20, 0x30, 0x00}, true},
		{"CALL 0x100(R12)", []byte{0x41, 0xff, 0x94, 0x24, 0x00, 0x01, 0x00, 0x00}, true},
		{"NOP", []byte{0x90}, false},
		{"RET", []byte{0xc3}, false},
		{"JMP AX", []byte{0xff, 0xe0}, false},
		{"JMP (AX)", []byte{0xff, 0x20}, false},
		{"JMP rel32", []byte{0xe9, 0x10, 0x20, 0x30, 0x40}, false},
		{"PUSH 8(DX)", []byte{0xff, 0x72, 0x08}, false},
		{"INC AX", []byte{0x48, 0xff, 0xc0}, false},
		{"CALL 8(DX) one byte short", []byte{0xff, 0x52}, false},
		{"CALL (DX) and a byte", []byte{0xff, 0x12, 0x90}, false},
		{"MOV", []byte{0x48, 0x89, 0xc3}, false},
	} {
		b := append(append([]byte{}, pad...), c.insn...)
		if got := afterCallAMD64(b); got != c.want {
			t.Errorf("%s (% x): %v, want %v", c.name, c.insn, got, c.want)
		}
		if c.want && indirectCallLen(c.insn) != len(c.insn) && c.insn[0] != 0xe8 {
			t.Errorf("%s: length %d, want %d", c.name, indirectCallLen(c.insn), len(c.insn))
		}
	}
	for _, b := range [][]byte{nil, {0xff}, {0xe8}, {0x41, 0xff}} {
		if afterCallAMD64(b) {
			t.Errorf("% x: a call", b)
		}
	}
}

func TestCallARM64(t *testing.T) {
	for _, c := range []struct {
		name string
		w    uint32
		call bool
	}{
		{"BL +4", 0x94000001, true},
		{"BL -4", 0x97ffffff, true},
		{"BLR X1", 0xd63f0020, true},
		{"BLR X30", 0xd63f03c0, true},
		{"BR X1", 0xd61f0020, false},
		{"B +4", 0x14000001, false},
		{"RET", 0xd65f03c0, false},
		{"NOP", 0xd503201f, false},
		{"SVC 0", 0xd4000001, false},
	} {
		if got := isCallARM64(c.w); got != c.call {
			t.Errorf("%s (%#08x): call %v, want %v", c.name, c.w, got, c.call)
		}
	}
	for _, c := range []struct {
		w          uint32
		addr, want uint64
		ok         bool
	}{
		{0x94000001, 0x1000, 0x1004, true},
		{0x97ffffff, 0x1004, 0x1000, true},
		{0x96000000, 0x10000000, 0x10000000 - 1<<27, true}, // the farthest back
		{0x95ffffff, 0x1000, 0x1000 + 1<<27 - 4, true},     // the farthest forward
		{0xd63f0020, 0x1000, 0, false},                     // BLR: no target
	} {
		got, ok := blTarget(c.w, c.addr)
		if got != c.want || ok != c.ok {
			t.Errorf("%#08x at %#x: %#x %v, want %#x %v", c.w, c.addr, got, ok, c.want, c.ok)
		}
	}
}

// TestCallSitesOfThisBinary checks the call-site check against the
// machine code of this test binary: every return address an unwind of
// this process's goroutine gave follows a call, and the entry of a
// function does not (it follows the previous function's padding).
func TestCallSitesOfThisBinary(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("reads amd64 machine code")
	}
	tab := selfTable(t)
	f, ok := tab.pcln.find(funcPC(TestCallSitesOfThisBinary))
	if !ok {
		t.Fatal("not found")
	}
	if err := tab.verifyReturn(f.entry); err == nil {
		t.Error("a function's entry passed as a return address")
	}
	if err := tab.verifyReturn(tab.textAddr + uint64(len(tab.text)) + 16); err == nil {
		t.Error("an address past the text passed as a return address")
	}
	// The return addresses of this function's calls: every E8 in it
	// whose target is a function's entry.
	n := 0
	for pc := f.entry; pc+5 <= f.end; pc++ {
		b := tab.code(pc+5, 5)
		if b[0] != 0xe8 {
			continue
		}
		to := pc + 5 + uint64(int64(int32(binary.LittleEndian.Uint32(b[1:]))))
		if g, ok := tab.pcln.find(to); ok && g.entry == to {
			n++
			if err := tab.verifyReturn(pc + 5); err != nil {
				t.Errorf("return address +%#x: %v", pc+5-f.entry, err)
			}
		}
	}
	if n < 3 {
		t.Errorf("%d calls found", n)
	}
}
