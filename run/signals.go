package run

import (
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"syscall"
)

// forwarder passes the signals nettrap gets on to its command. It starts
// catching before the command exists, so that none is lost, and forwards
// from when the command has started until stop.
type forwarder struct {
	sigs   chan os.Signal
	done   chan struct{} // closed by stop
	exited chan struct{} // closed when the forwarding goroutine returns
}

// forwarded are the signals a command gets from nettrap: the terminal's
// and a CI runner's, and SIGQUIT, which the go command sends to the
// -exec program on -timeout and expects the test binary's goroutine dump.
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT, syscall.SIGHUP, syscall.SIGUSR1, syscall.SIGUSR2}

func catchSignals() *forwarder {
	f := &forwarder{sigs: make(chan os.Signal, 8), done: make(chan struct{})}
	signal.Notify(f.sigs, forwarded...)
	return f
}

// forward passes every signal caught to `to` until stop. Call it once.
func (f *forwarder) forward(to func(syscall.Signal)) {
	f.exited = make(chan struct{})
	go func() {
		defer close(f.exited)
		for {
			select {
			case sig := <-f.sigs:
				to(sig.(syscall.Signal))
			case <-f.done:
				return
			}
		}
	}()
}

// stop ends the catching and waits for the forwarding goroutine to end.
func (f *forwarder) stop() {
	signal.Stop(f.sigs)
	close(f.done)
	if f.exited != nil {
		<-f.exited
	}
}

// startAndWait starts cmd, passes nettrap's signals to `to` and waits.
// The error is only for a command that could not start; started, if not
// nil, gets the process as soon as there is one. The command joins rp's
// process group when there is one, and dies with nettrap.
func startAndWait(cmd *exec.Cmd, rp *reaper, to func(syscall.Signal), started func(*os.Process)) (int, error) {
	fw := catchSignals()
	defer fw.stop()
	rp.join(cmd)
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	// PR_SET_PDEATHSIG fires when the forking thread exits, not the
	// process: hold this thread until the command is reaped.
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	if started != nil {
		started(cmd.Process)
	}
	fw.forward(to)
	err := cmd.Wait()
	if errors.Is(err, exec.ErrWaitDelay) {
		err = nil
	}
	return exitStatus(cmd, err), nil
}

// toProcess forwards to the command's process.
func toProcess(cmd *exec.Cmd) func(syscall.Signal) {
	return func(sig syscall.Signal) { cmd.Process.Signal(sig) }
}

// toTree forwards to the command and all its descendants: the go command
// does not stop running test binaries on SIGINT, it only stops starting
// new ones.
func toTree(cmd *exec.Cmd) func(syscall.Signal) {
	return func(sig syscall.Signal) { signalTree(cmd.Process.Pid, sig) }
}
