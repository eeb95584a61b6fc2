package landlock

import "unsafe"

func unsafePointer(b *[1]byte) unsafe.Pointer { return unsafe.Pointer(b) }
