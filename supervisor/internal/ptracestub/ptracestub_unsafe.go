package ptracestub

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// readStubProgram decodes the program the stub reads from its pipe: the
// supervisor writes the unix.SockFilter array as it lies in memory.
func stubProgramBytes(prog []unix.SockFilter) []byte {
	if len(prog) == 0 {
		return nil
	}
	n := len(prog) * int(unsafe.Sizeof(prog[0]))
	return unsafe.Slice((*byte)(unsafe.Pointer(&prog[0])), n)
}

// stubProgram is the inverse of stubProgramBytes; b must hold whole
// instructions.
func stubProgram(b []byte) []unix.SockFilter {
	size := int(unsafe.Sizeof(unix.SockFilter{}))
	prog := make([]unix.SockFilter, len(b)/size)
	copy(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(prog))), len(prog)*size), b)
	return prog
}
