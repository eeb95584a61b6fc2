// Command gofloor is cfloor -e written in Go: the same filter, the same
// syscalls per call, and nothing else (no decision, no audit, no watch).
// It is what the benchmarks weigh the Go runtime's own share of a
// supervisor's cost with: nettrap over gofloor is what nettrap's code
// adds, gofloor over cfloor what a Go receiver costs whatever it does.
//
//	gofloor [-n] [-c] COMMAND [ARGS...]
//
//	-n  do not ask for SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
//	-c  say at the end how many calls were made here, and how many continued
//
// One receiver, a goroutine locked to its thread, blocks in
// SECCOMP_IOCTL_NOTIF_RECV and answers each call itself, as nettrap's
// receivers do: it reads the sockaddr (and a sendto's payload, a
// sendmsg's header, control data and payload) with process_vm_readv,
// checks the notification with ID_VALID, borrows the socket with
// pidfd_getfd (the thread's pidfd cached) and makes the call; sendmmsg
// continues. The syscalls that never wait (ID_VALID, SEND, pidfd_getfd)
// are raw, as nettrap's are. Exit status: the command's, or 125 when it
// cannot confine. x86-64 and arm64 only; calls of another ABI go
// through untrapped.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

const exitCant = 125

func main() {
	args := os.Args[1:]
	if os.Getenv(stubEnv) != "" {
		os.Unsetenv(stubEnv)
		os.Exit(stub(args))
	}
	sync, count := true, false
	for len(args) > 0 && (args[0] == "-n" || args[0] == "-c") {
		sync, count = sync && args[0] != "-n", count || args[0] == "-c"
		args = args[1:]
	}
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: gofloor [-n] [-c] COMMAND [ARGS...]")
		os.Exit(exitCant)
	}
	cmd, listener, err := start(args, sync)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gofloor:", err)
		os.Exit(exitCant)
	}
	signal.Ignore(syscall.SIGPIPE)
	go serve(listener)
	err = cmd.Wait()
	if count {
		fmt.Fprintf(os.Stderr, "gofloor: %d made, %d continued\n", made.Load(), continued.Load())
	}
	if cmd.ProcessState == nil {
		fmt.Fprintln(os.Stderr, "gofloor: wait:", err)
		os.Exit(exitCant)
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		os.Exit(128 + int(ws.Signal()))
	}
	os.Exit(cmd.ProcessState.ExitCode())
}

// stubEnv makes this binary the stub that installs the filter and execs
// the command (stub.go).
const stubEnv = "GOFLOOR_STUB"

// start runs the stub, takes its listener with pidfd_getfd, sets the
// listener's flags, and lets the stub exec the command.
func start(args []string, sync bool) (*exec.Cmd, int, error) {
	upR, upW, err := os.Pipe()
	if err != nil {
		return nil, -1, err
	}
	downR, downW, err := os.Pipe()
	if err != nil {
		return nil, -1, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, -1, err
	}
	cmd := exec.Command(self, args...)
	cmd.Env = append(os.Environ(), stubEnv+"=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.ExtraFiles = []*os.File{upW, downR} // 3, 4
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, -1, err
	}
	upW.Close()
	downR.Close()
	buf := make([]byte, 16)
	n, _ := upR.Read(buf)
	remote, err := strconv.Atoi(string(buf[:n]))
	if err != nil {
		return nil, -1, fmt.Errorf("the stub could not install the filter")
	}
	pidfd, err := unix.PidfdOpen(cmd.Process.Pid, 0)
	if err != nil {
		return nil, -1, os.NewSyscallError("pidfd_open", err)
	}
	listener, err := unix.PidfdGetfd(pidfd, remote, 0)
	unix.Close(pidfd)
	if err != nil {
		return nil, -1, os.NewSyscallError("pidfd_getfd", err)
	}
	if sync {
		if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(listener), unix.SECCOMP_IOCTL_NOTIF_SET_FLAGS,
			unix.SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP); e != 0 {
			return nil, -1, os.NewSyscallError("ioctl(SECCOMP_IOCTL_NOTIF_SET_FLAGS)", e)
		}
	}
	if _, err := downW.Write([]byte{'g'}); err != nil {
		return nil, -1, err
	}
	downW.Close()
	return cmd, listener, nil
}

// made and continued count the answered calls (-c).
var made, continued atomic.Int64

// serve is the receiver: it answers every notification, on one thread.
func serve(listener int) {
	runtime.LockOSThread()
	// As nettrap's receivers: no signal interrupts a call made here.
	var all unix.Sigset_t
	for i := range all.Val {
		all.Val[i] = ^all.Val[i]
	}
	unix.PthreadSigmask(unix.SIG_BLOCK, &all, nil)
	var r receiver
	r.listener = listener
	r.pidfds = map[uint32]int{}
	for {
		r.n = notif{}
		if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(listener), unix.SECCOMP_IOCTL_NOTIF_RECV,
			r.notifPtr()); e != 0 {
			if e == unix.ENOENT || e == unix.EINTR {
				continue
			}
			fmt.Fprintln(os.Stderr, "gofloor:", os.NewSyscallError("ioctl(SECCOMP_IOCTL_NOTIF_RECV)", e))
			return
		}
		val, errno, cont, gone := r.handle()
		if gone {
			continue
		}
		r.resp = resp{ID: r.n.ID, Val: val, Error: -int32(errno)}
		if cont {
			r.resp.Flags = unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE
			continued.Add(1)
		} else {
			made.Add(1)
		}
		r.send()
	}
}
