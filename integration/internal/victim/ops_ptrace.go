package main

import (
	"os"
	"os/exec"

	"golang.org/x/sys/unix"
)

// ptraceChild attaches to a child of its own, as strace -f or a debugger
// does: harmless under nettrap, since the child is confined too.
func ptraceChild([]string) (any, error) {
	child := exec.Command("sleep", "30")
	if err := child.Start(); err != nil {
		return nil, err
	}
	defer func() { child.Process.Kill(); child.Wait() }()
	return nil, seize(child.Process.Pid)
}

// ptraceParent attaches to the (unconfined) process that started it: the
// way to make an unconfined process do the networking.
func ptraceParent([]string) (any, error) {
	return nil, seize(os.Getppid())
}

// seize seizes pid. A seized tracee that was never stopped cannot
// be detached (ESRCH): the tracer's exit lets it go.
func seize(pid int) error {
	return unix.PtraceSeize(pid)
}
