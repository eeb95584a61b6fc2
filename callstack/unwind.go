package callstack

import (
	"encoding/binary"
	"fmt"
	"io"
)

// Regs are the registers an unwind starts from, as process addresses.
type Regs struct {
	// PC and SP are the thread's program counter and stack pointer
	// (what /proc/TID/syscall gives for a thread blocked in a syscall:
	// the pc after its system call instruction). A PC on a system call
	// instruction is taken as the pc after it (see Unwind).
	PC, SP uint64
	// LR is arm64's link register (X30), from ptrace; 0: unknown. It
	// is read only while the innermost function has not saved it.
	LR uint64
	// FP is the frame pointer (RBP, X29), from ptrace; 0: unknown.
	// Not used yet: every frame is unwound with its pcsp table.
	FP uint64
}

// A Stack is the result of an unwind: the frames that were verified,
// innermost first, and why the walk ended.
type Stack struct {
	// Frames are the calls, innermost first; a call inlined into a
	// function comes before the function's own frame.
	Frames []Frame
	// Complete tells that the walk reached the start of the goroutine
	// (runtime.goexit): Frames is the whole stack.
	Complete bool
	// Stop says why the walk ended before, "" when Complete. The frames
	// beyond it are unknown: nothing past a frame that could not be
	// verified is reported.
	Stop string
	// FromC tells that the call was made by C code that Go called
	// through cgo: Frames start at the Go side of that call
	// (runtime.cgocall), the C frames are not named (cgo.go).
	FromC bool
}

// MaxFrames bounds an unwind, in physical frames.
const MaxFrames = 64

// Unwind walks the stack of a stopped thread from r, reading its memory
// through mem (ReadAt at process addresses, such as ProcessMemory or
// /proc/PID/mem). bias is the executable's load bias in the process (0
// for a non-PIE executable; Bias tells).
//
// Each frame's size comes from the function's pcsp table, which places
// the return address into its caller; the return address is taken only
// if it is in a known function, right after a call instruction (amd64:
// CALL rel32 or an indirect CALL; arm64: BL or BLR), or is the
// goroutine's start (runtime.goexit). The walk stops at the first
// address that fails, and says so in Stop.
//
// A pc on a system call instruction (arm64 SVC, amd64 SYSCALL) is
// unwound, and named, as the pc right after it, where the kernel puts a
// thread's pc while it is in the call (/proc/TID/syscall, seccomp and
// syscall stops): a thread interrupted in a call to be restarted stops
// there once the kernel has rewound its pc to the instruction (arm64's
// do_signal rewinds before the signal and ptrace stops, so that
// PTRACE_GETREGSET at a PTRACE_INTERRUPT stop of a thread blocked in
// read(2) gives the SVC's address), and a thread stopped about to make
// the call is making it from the same call site. Both then give the
// same frames, and the innermost frame's line is the call's.
func (t *Table) Unwind(mem io.ReaderAt, bias uint64, r Regs) *Stack {
	r.PC += t.syscallInsnAt(r.PC - bias)
	s := &Stack{}
	var word [8]byte
	read := func(addr uint64) (uint64, error) {
		if _, err := mem.ReadAt(word[:], int64(addr)); err != nil {
			return 0, fmt.Errorf("reading the stack at %#x: %w", addr, err)
		}
		return binary.LittleEndian.Uint64(word[:]), nil
	}
	pc, sp := r.PC, r.SP
	first := 0
	if _, ok := t.pcln.find(pc - bias); !ok && t.Arch == AMD64 {
		goPC, goSP, err := t.crossCgo(read, sp, bias)
		if err == nil {
			err = t.verifyReturn(goPC - bias)
		}
		if err != nil {
			s.Stop = fmt.Sprintf("pc %#x is not in a Go function (C code, or not this executable): %v", pc, err)
			return s
		}
		s.FromC = true
		pc, sp, first = goPC, goSP, 1
	}
	for n := first; ; n++ {
		if n == MaxFrames {
			s.Stop = fmt.Sprintf("more than %d frames", MaxFrames)
			return s
		}
		innermost := n == 0
		lookup := pc - bias
		if !innermost {
			lookup--
		}
		f, ok := t.pcln.find(lookup)
		if !ok {
			if innermost {
				s.Stop = fmt.Sprintf("pc %#x is not in a Go function (cgo, or not this executable)", pc)
			} else {
				s.Stop = fmt.Sprintf("return address %#x is not in a Go function", pc)
			}
			return s
		}
		s.Frames = t.symbolize(s.Frames, f, pc, bias, innermost)
		// At a return address, the frame size at the call: a call
		// may be a function's last instruction.
		spd, ok := t.pcln.spdelta(f, lookup)
		if !ok || spd < 0 || spd > 1<<30 {
			s.Stop = fmt.Sprintf("no usable frame size at %#x in %s", pc, t.pcln.name(f.nameOff()))
			return s
		}
		var ret, callerSP uint64
		var err error
		switch t.Arch {
		case AMD64:
			slot := sp + uint64(spd)
			ret, err = read(slot)
			callerSP = slot + 8
		case ARM64:
			callerSP = sp + uint64(spd)
			switch {
			case spd != 0:
				ret, err = read(sp)
			case innermost && r.LR != 0:
				ret = r.LR
			case innermost:
				// A leaf that has not saved the link register, such
				// as the syscall stub: find its caller from the
				// caller's own saved return address.
				var c []Frame
				c, pc, sp, err = t.arm64Leaf(read, f, sp, bias)
				if err != nil {
					s.Stop = err.Error()
					return s
				}
				s.Frames = append(s.Frames, c...)
				if t.isGoexitReturn(pc - bias) {
					s.Complete = true
					return s
				}
				n++
				continue
			default:
				s.Stop = fmt.Sprintf("%s has no frame: its return address is not on the stack", t.pcln.name(f.nameOff()))
				return s
			}
		}
		if err != nil {
			s.Stop = err.Error()
			return s
		}
		if t.isGoexitReturn(ret - bias) {
			s.Complete = true
			return s
		}
		if err := t.verifyReturn(ret - bias); err != nil {
			s.Stop = fmt.Sprintf("return address %#x after %s: %v", ret, t.pcln.name(f.nameOff()), err)
			return s
		}
		pc, sp = ret, callerSP
	}
}

// isGoexitReturn tells whether ret (a link-time address) is the return
// address the runtime puts under a goroutine's first function:
// runtime.goexit's entry plus one instruction, after no call.
func (t *Table) isGoexitReturn(ret uint64) bool {
	return t.hasGoexit && ret == t.goexit.entry+t.pcln.quantum
}

// verifyReturn checks a return address (link-time): it must be in a
// known function, after a call instruction.
func (t *Table) verifyReturn(ret uint64) error {
	f, ok := t.pcln.find(ret - 1)
	if !ok {
		return fmt.Errorf("not in a Go function")
	}
	switch t.Arch {
	case AMD64:
		if !afterCallAMD64(t.code(ret, maxCallLenAMD64)) {
			return fmt.Errorf("not after a call instruction in %s", t.pcln.name(f.nameOff()))
		}
	case ARM64:
		b := t.code(ret, 4)
		if len(b) != 4 || !isCallARM64(binary.LittleEndian.Uint32(b)) {
			return fmt.Errorf("not after a call instruction in %s", t.pcln.name(f.nameOff()))
		}
	}
	return nil
}

// syscallInsnAt returns the length of the system call instruction at
// pc (link-time) in a Go function, when the instruction after it is in
// the same function (the call returns there); 0 otherwise.
func (t *Table) syscallInsnAt(pc uint64) uint64 {
	f, ok := t.pcln.find(pc)
	if !ok {
		return 0
	}
	var n uint64
	switch t.Arch {
	case AMD64:
		n = 2
		if b := t.code(pc+n, int(n)); len(b) != int(n) || b[0] != 0x0f || b[1] != 0x05 {
			return 0
		}
	case ARM64:
		n = 4
		if b := t.code(pc+n, int(n)); len(b) != int(n) || !isSVCARM64(binary.LittleEndian.Uint32(b)) {
			return 0
		}
	default:
		return 0
	}
	if pc+n >= f.end {
		return 0
	}
	return n
}
