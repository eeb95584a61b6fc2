package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// reexec runs this test binary again, with the same arguments, in new
// network and mount namespaces and returns its exit code. An error means
// the namespaces could not be created and nothing ran.
func reexec() (int, error) {
	// Pdeathsig is tied to the thread that forks, not to the process: pin
	// it so the child is killed with us (e.g. on go test's timeout).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	var errs []error
	for _, userns := range attempts() {
		cmd := command(userns)
		if err := cmd.Start(); err != nil {
			errs = append(errs, fmt.Errorf("userns=%v: %w", userns, err))
			continue
		}
		stop := forwardSignals(cmd.Process)
		code := wait(cmd)
		stop()
		return code, nil
	}
	return 0, errors.Join(errs...)
}

// attempts lists the ways to try: as root first without a user namespace
// (fewer surprises), then with one, which also works unprivileged.
func attempts() []bool {
	if os.Geteuid() == 0 {
		return []bool{false, true}
	}
	return []bool{true}
}

func command(userns bool) *exec.Cmd {
	cmd := exec.Command("/proc/self/exe", os.Args[1:]...)
	cmd.Args[0] = os.Args[0]
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), envMarker+"="+stateEnter)
	attr := &syscall.SysProcAttr{
		Cloneflags: unix.CLONE_NEWNET | unix.CLONE_NEWNS,
		Pdeathsig:  syscall.SIGKILL,
	}
	if userns {
		attr.Cloneflags |= unix.CLONE_NEWUSER
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}}
		attr.GidMappingsEnableSetgroups = false
	}
	cmd.SysProcAttr = attr
	return cmd
}

// wait returns the child's exit code, 128+signal when it was killed.
func wait(cmd *exec.Cmd) int {
	err := cmd.Wait()
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		fmt.Fprintf(os.Stderr, "sandbox: waiting for the sandboxed test binary: %v\n", err)
		return 1
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		fmt.Fprintf(os.Stderr, "sandbox: sandboxed test binary killed by %v\n", ws.Signal())
		return 128 + int(ws.Signal())
	}
	return ee.ExitCode()
}

// forwardSignals passes the signals go test and users send (SIGQUIT on a
// timeout, SIGINT, SIGTERM) on to the sandboxed binary, which does the work
// and prints the goroutine dump that a timeout is meant to produce.
func forwardSignals(p *os.Process) (stop func()) {
	ch := make(chan os.Signal, 4)
	signal.Notify(ch, syscall.SIGQUIT, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case sig := <-ch:
				_ = p.Signal(sig)
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(ch)
		close(done)
	}
}
