package compat32

import "runtime/debug"

// int80 is call_amd64.s.
func int80(nr, a1, a2, a3, a4, a5 uintptr) uintptr

// i386Getpid is getpid's number in the i386 ABI.
const i386Getpid = 20

// Syscall makes i386 call nr with the first five arguments of a (no
// probe or victim needs the sixth, which is in Go's frame pointer) and
// returns eax sign-extended: -errno on failure. ok is false when the
// kernel has no i386 ABI (built without IA32 emulation, or booted with
// ia32_emulation=0): `int $0x80` then faults, which SetPanicOnFault turns
// into a panic recovered here.
func Syscall(nr uintptr, a [6]uintptr) (r int32, ok bool) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	// A 32-bit program's registers are 32 bits wide: the upper halves
	// are cut off, as its calls would carry them.
	m := func(v uintptr) uintptr { return uintptr(uint32(v)) }
	return int32(int80(nr, m(a[0]), m(a[1]), m(a[2]), m(a[3]), m(a[4]))), true
}

// Runs tells whether the kernel runs the 32-bit ABI, and callable
// whether this process can make its calls (on amd64, both or neither).
func Runs() (runs, callable bool) {
	_, ok := Syscall(i386Getpid, [6]uintptr{})
	return ok, ok
}
