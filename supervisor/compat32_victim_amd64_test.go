package supervisor_test

import (
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/internal/compat32"
)

// i386Connect connects a TCP socket to s (IPv4) through the i386 ABI's
// connect (362), from this 64-bit process (`int $0x80`): the sockaddr
// sits in a page below 4 GiB (MAP_32BIT), where a 32-bit pointer reaches.
func i386Connect(s string) error {
	page, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_32BIT)
	if err != nil {
		return err
	}
	defer unix.Munmap(page)
	copy(page, rawInet4(s))
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	r, ok := compat32.Syscall(362, [6]uintptr{uintptr(fd), uintptr(unsafe.Pointer(&page[0])), 16})
	switch {
	case !ok:
		return errNoI386
	case r < 0:
		return unix.Errno(-r)
	}
	return nil
}
