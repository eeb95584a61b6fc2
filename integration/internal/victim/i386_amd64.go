package main

import (
	"encoding/binary"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/internal/compat32"
)

// i386 syscall numbers (arch/x86/entry/syscalls/syscall_32.tbl).
const (
	nrSocketcall = 102
	nrSocket     = 359
	nrConnect    = 362

	socketcallSocket  = 1 // SYS_SOCKET in linux/net.h
	socketcallConnect = 3 // SYS_CONNECT
)

const mapLow = unix.MAP_32BIT

var errHighPage = errors.New("mmap MAP_32BIT returned memory above 4 GiB")

// syscall386 makes an i386 syscall (internal/compat32: `int $0x80`).
// When the kernel has IA32 emulation off, INT $0x80 is a general
// protection fault (SIGSEGV, not ENOSYS): compat32 recovers it, and it is
// a signalError here instead of a crashed victim.
func syscall386(name string, nr, a1, a2, a3 uint32) (uint32, error) {
	r, ok := compat32.Syscall(uintptr(nr), [6]uintptr{uintptr(a1), uintptr(a2), uintptr(a3)})
	if !ok {
		return 0, signalError{unix.SIGSEGV, fmt.Sprintf("%s: int 0x80 faulted: IA32 emulation is off in this kernel", name)}
	}
	return i386Result(r, name)
}

func i386Result(r int32, name string) (uint32, error) {
	if r < 0 && r > -4096 {
		return 0, sysErr(name, unix.Errno(-r))
	}
	return uint32(r), nil
}

// i386Socket opens AF_INET/SOCK_STREAM with the direct i386 socket syscall.
func i386Socket([]string) (any, error) {
	fd, err := syscall386("i386 socket", nrSocket, unix.AF_INET, unix.SOCK_STREAM, 0)
	if err != nil {
		return nil, err
	}
	return nil, sysErr("close", unix.Close(int(fd)))
}

// i386Connect creates a socket and connects it through socketcall(2), the
// multiplexer old i386 programs use; its arguments are an array in memory.
func i386Connect(args []string) (any, error) {
	return i386Dial(args[0], false)
}

// i386ConnectDirect does the same with the direct i386 connect syscall.
func i386ConnectDirect(args []string) (any, error) {
	return i386Dial(args[0], true)
}

func i386Dial(addr string, direct bool) (any, error) {
	ap, err := parseAddr4(addr)
	if err != nil {
		return nil, err
	}
	page, err := lowPage()
	if err != nil {
		return nil, err
	}
	defer unix.Munmap(page)
	// Layout of the low page: sockaddr_in at 0, socketcall args at 64.
	sa, err := rawSockaddr(ap)
	if err != nil {
		return nil, err
	}
	copy(page, sa)
	fd, err := socketcall(page, socketcallSocket, unix.AF_INET, unix.SOCK_STREAM, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(int(fd))
	if direct {
		_, err = syscall386("i386 connect", nrConnect, fd, addr32(page, 0), uint32(len(sa)))
	} else {
		_, err = socketcall(page, socketcallConnect, fd, addr32(page, 0), uint32(len(sa)))
	}
	return nil, err
}

// socketcall puts a1..a3 into page at 64 and calls socketcall(call, args).
func socketcall(page []byte, call, a1, a2, a3 uint32) (uint32, error) {
	for i, a := range []uint32{a1, a2, a3} {
		binary.LittleEndian.PutUint32(page[64+4*i:], a)
	}
	return syscall386("i386 socketcall", nrSocketcall, call, addr32(page, 64), 0)
}
