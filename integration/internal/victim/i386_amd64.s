#include "textflag.h"

// func int80(nr, a1, a2, a3 uint32) int32
//
// Enters the kernel through the i386 gate (INT $0x80) from 64-bit code: the
// kernel then uses the i386 syscall table and 32-bit arguments in BX, CX, DX.
TEXT ·int80(SB), NOSPLIT, $0-20
	MOVL nr+0(FP), AX
	MOVL a1+4(FP), BX
	MOVL a2+8(FP), CX
	MOVL a3+12(FP), DX
	INT  $0x80
	MOVL AX, ret+16(FP)
	RET
