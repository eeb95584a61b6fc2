package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// Offsets in struct seccomp_data {int nr; u32 arch; u64 ip; u64 args[6]}.
const (
	offNr   = 0
	offArch = 4
	offArgs = 16
)

// filter is cfloor's: connect, sendmsg, sendmmsg and a sendto with an
// address (arg 4 not NULL) of the native ABI go to the supervisor.
func filter() []bpf.Instruction {
	const notify, allow = unix.SECCOMP_RET_USER_NOTIF, unix.SECCOMP_RET_ALLOW
	lo, hi := uint32(offArgs+8*4), uint32(offArgs+8*4+4)
	if nativeEndianBig {
		lo, hi = hi, lo
	}
	return []bpf.Instruction{
		bpf.LoadAbsolute{Off: offArch, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: nativeArch, SkipTrue: 1},
		bpf.RetConstant{Val: allow},
		bpf.LoadAbsolute{Off: offNr, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_CONNECT, SkipTrue: 6},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_SENDMSG, SkipTrue: 5},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_SENDMMSG, SkipTrue: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_SENDTO, SkipFalse: 2},
		bpf.LoadAbsolute{Off: lo, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0, SkipTrue: 2, SkipFalse: 1},
		bpf.RetConstant{Val: allow},
		bpf.RetConstant{Val: notify},
		bpf.LoadAbsolute{Off: hi, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0, SkipFalse: 1},
		bpf.RetConstant{Val: allow},
		bpf.RetConstant{Val: notify},
	}
}

// stub installs the filter on its own thread, tells the parent its
// listener's number (fd 3), waits for the parent to have taken it (fd
// 4), and execs the command from that thread, the only one the filter
// is on: the exec ends the others.
func stub(args []string) int {
	runtime.LockOSThread()
	path, err := exec.LookPath(args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, "gofloor:", err)
		return exitCant
	}
	raw, err := bpf.Assemble(filter())
	if err != nil {
		fmt.Fprintln(os.Stderr, "gofloor:", err)
		return exitCant
	}
	prog := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		prog[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		fmt.Fprintln(os.Stderr, "gofloor:", os.NewSyscallError("prctl(PR_SET_NO_NEW_PRIVS)", err))
		return exitCant
	}
	fd, err := installFilter(prog)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gofloor:", err)
		return exitCant
	}
	up, down := os.NewFile(3, "up"), os.NewFile(4, "down")
	if _, err := up.WriteString(strconv.Itoa(fd)); err != nil {
		return exitCant
	}
	if _, err := down.Read(make([]byte, 1)); err != nil {
		return exitCant
	}
	unix.Close(fd)
	up.Close()
	down.Close()
	err = unix.Exec(path, args, os.Environ())
	fmt.Fprintln(os.Stderr, "gofloor:", args[0]+":", err)
	return exitCant
}
