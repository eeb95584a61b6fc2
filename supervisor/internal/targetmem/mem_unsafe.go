package targetmem

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// ProcessVMReadv reads into local from remote in task tid with a raw
// syscall, as the notify ioctls are: it does not wait unless the target's pages
// must be read back in.
func ProcessVMReadv(tid int, local []unix.Iovec, remote []unix.RemoteIovec) (int, error) {
	var lp, rp unsafe.Pointer
	if len(local) > 0 {
		lp = unsafe.Pointer(&local[0])
	}
	if len(remote) > 0 {
		rp = unsafe.Pointer(&remote[0])
	}
	n, _, e := unix.RawSyscall6(unix.SYS_PROCESS_VM_READV, uintptr(tid), uintptr(lp), uintptr(len(local)), uintptr(rp), uintptr(len(remote)), 0)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}
