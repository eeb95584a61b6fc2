package targetmem

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// ProcessVMReadv reads into local from remote in task tid. Not a raw
// syscall, although it is short where the pages are in memory: the
// target chooses the pages, and one on a userfaultfd range or a FUSE
// mapping it serves makes the read wait for as long as it likes. A raw
// syscall there would keep its P from the Go scheduler, and a receiver's
// thread blocks the signals that could preempt it, so the next stop of
// the world (a garbage collection) would wait for the read, with every
// other goroutine of the supervisor (TestStalledReadHoldsUpNoOther).
func ProcessVMReadv(tid int, local []unix.Iovec, remote []unix.RemoteIovec) (int, error) {
	var lp, rp unsafe.Pointer
	if len(local) > 0 {
		lp = unsafe.Pointer(&local[0])
	}
	if len(remote) > 0 {
		rp = unsafe.Pointer(&remote[0])
	}
	n, _, e := unix.Syscall6(unix.SYS_PROCESS_VM_READV, uintptr(tid), uintptr(lp), uintptr(len(local)), uintptr(rp), uintptr(len(remote)), 0)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}
