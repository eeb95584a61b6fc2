// Package callstack names the code that made a system call: it walks
// the stack of a thread stopped in the kernel (held by a seccomp user
// notification, or by ptrace) and symbolizes it with the executable's
// own tables, so that a blocked attempt can say "client.go:42
// (pkg.(*Client).Get)". The engines' tasks use it (decision.StackReader)
// for messages, audit records and annotations.
//
// # Tables
//
// Open reads an executable's .gopclntab (kept by -ldflags='-s -w') and
// .text into a Table, once per executable: the caller keeps it. File
// and line come from debug/gosym; the frame size table (pcsp), the
// inline trees and the names of inlined functions, which debug/gosym
// does not expose, are read here (pclntab.go), from the Go 1.20+ layout
// only (magic 0xfffffff1, little-endian, 64-bit): older layouts are
// refused with an error. The module path comes from debug/buildinfo
// (for a go test binary, the module under test). A PIE executable's
// load bias comes from its mapping in /proc/PID/maps (Bias).
//
// # Unwinding
//
// Unwind starts from a thread's registers (Regs: the pc and sp that
// /proc/TID/syscall gives, see ReadSyscall, or full registers from
// ptrace) and reads the stack through an io.ReaderAt (ProcessMemory:
// process_vm_readv). Each frame's size at its pc comes from its pcsp
// table:
//
//   - amd64: the return address is at sp + frame size, the caller's sp
//     is 8 above it. Supported at any pc, innermost or not.
//   - arm64: the caller's sp is sp + frame size; a function with a
//     frame saved its return address at 0(sp). An innermost function
//     with no frame (a leaf such as the syscall stub) still has it in
//     the link register: taken from Regs.LR when known (ptrace); when
//     not (/proc/TID/syscall), its caller is found from the caller's
//     own saved return address, which must follow a BL to the caller's
//     entry, and the caller's pc is after its only BL to the leaf. A
//     caller reached by BLR, or calling the leaf from several places,
//     ends the walk. The tests run this code on a stack laid out as
//     arm64 Go code lays it out, for the arm64 build of a fixture, not
//     on a real arm64 thread (the machines that run them are amd64).
//
// A goroutine's stack does not move while it is in a system call: the
// runtime does not shrink the stack of a goroutine in one
// (isShrinkStackSafe), and only the goroutine itself grows it. A
// goroutine in a raw system call (no entersyscall) is running, for the
// runtime, and is not moved either. The stack of a thread held in the
// kernel can therefore be read a word at a time.
//
// Every return address is verified before it is used: it must be in a
// known function, right after a call instruction (amd64: CALL rel32, or
// an indirect CALL r/m64 of 2 to 8 bytes; arm64: BL or BLR), or be the
// goroutine's start (runtime.goexit's entry plus one instruction),
// where the walk ends, Complete. Anything else ends the walk with the
// reason in Stack.Stop: a guess is never reported as a frame. The walk
// also ends after MaxFrames frames.
//
// C code that Go called through cgo (amd64): the walk finds the cgo
// call's frame on the system stack and goes on from the goroutine's
// stack (cgo.go; Stack.FromC), so the Go frames of the call are named,
// the C frames are not. An executable the host linker linked (cgo's
// external linking) has C code before Go's in .text: function offsets
// count from runtime.text, read from the symbol table or, stripped,
// from the moduledata.
//
// Not supported (the walk stops, saying why): a pc outside Go code
// otherwise (a C program, arm64 cgo, the VDSO: frame pointers of C
// frames are not walked, Regs.FP is unused),
// a frame whose pcsp table has no usable value (assembly that popped
// its return address), stacks switched within the walk (signal
// handlers, the system stack) but for the cgo call above. A linux/amd64 or
// linux/arm64 executable has one text section (the linker splits text
// for arm, ppc64 and darwin/arm64 only), which the tables assume.
//
// # Where
//
// A physical frame becomes one Frame per call inlined at its pc (from
// the inline tree, found through the module data in .go.module or
// .noptrdata) and one for the function itself. Table.Where picks the
// innermost frame in the executable's main module (not the standard
// library, runtime or internal packages, nor vendored ones; package
// main but for a test binary's generated one), as "file.go:LINE
// (pkg.Func)" with its file relative to the module's root when that can
// be told, and the goroutine's entry function: the outermost frame, the
// function a go statement's wrapper calls, main.main for the main
// goroutine, or for the testing package's goroutines the test,
// benchmark or fuzz function.
package callstack
