package ascaller

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// rawSetgroups sets the calling thread's supplementary groups: the raw
// syscall acts on this thread alone (the caller threads), where glibc and
// x/sys/unix's Setgroups change every thread of the process.
func rawSetgroups(groups []int) unix.Errno {
	gids := make([]uint32, len(groups))
	for i, g := range groups {
		gids[i] = uint32(g)
	}
	var p unsafe.Pointer
	if len(gids) > 0 {
		p = unsafe.Pointer(&gids[0])
	}
	_, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, uintptr(len(gids)), uintptr(p), 0)
	return e
}
