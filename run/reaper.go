package run

import (
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/gotest"
	"github.com/nettrap/nettrap/internal/personality"
)

// A nettrap killed with SIGKILL can do nothing more, and the kernel's
// PR_SET_PDEATHSIG (see supervisor.Start) kills only its direct child: a
// shell's background job, a test's server, make's recipes would live on.
// So the command runs in a process group of its own, led by a reaper: a
// small copy of nettrap that holds the read end of a pipe whose only
// write end is nettrap's. When nettrap ends normally it writes "done" and
// the reaper exits; when the pipe reaches EOF without it (nettrap died,
// however), the reaper kills the whole group, itself included.
//
// The group is the reaper's, made before the command starts, so there is
// no moment when the command runs outside it. It reaches every descendant
// that does not leave the group (setsid or setpgid: a daemon escapes, as
// it escapes any process-group kill). A cgroup would hold those too, but
// is rarely writable where tests run (containers, ordinary users).
//
// Not when nettrap runs in the foreground of a terminal: a command in
// another process group could not read the terminal (SIGTTIN) and would
// not get the terminal's Ctrl-C, so there it keeps nettrap's group (the
// terminal's job, which may hold other commands of a pipeline: not ours
// to kill), and only the direct child dies with a SIGKILLed nettrap.

// ReaperArgv0 marks a nettrap started as a reaper: the dispatch
// (internal/personality, from main or TestMain) then runs Reaper.
const ReaperArgv0 = "nettrap-reaper"

func init() {
	personality.Register(ReaperArgv0, Reaper)
}

// reaper is a started reaper, whose process group the command joins.
type reaper struct {
	cmd *exec.Cmd
	w   *os.File
}

// startReaper starts the reaper of the command about to run, or returns
// nil when there should be none (a terminal's foreground) or it cannot
// start: the command then stays in nettrap's group, as without one. A
// binary that does not dispatch the personalities cannot start one: its
// copy would run the binary's main (a test binary's tests) instead.
func startReaper() *reaper {
	if inTerminalForeground() || personality.Check() != nil {
		return nil
	}
	self, err := os.Executable()
	if err != nil {
		return nil
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil
	}
	defer r.Close()
	cmd := &exec.Cmd{Path: self, Args: []string{ReaperArgv0}, ExtraFiles: []*os.File{r},
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true}}
	if err := cmd.Start(); err != nil {
		w.Close()
		return nil
	}
	return &reaper{cmd: cmd, w: w}
}

// join puts cmd into the reaper's process group.
func (rp *reaper) join(cmd *exec.Cmd) {
	if rp == nil {
		return
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pgid = rp.cmd.Process.Pid
}

// toGroup forwards to the command: to its whole group when it has one,
// as the terminal or a CI runner would have when it shared ours.
func (rp *reaper) toGroup(cmd *exec.Cmd) func(syscall.Signal) {
	return func(sig syscall.Signal) {
		if rp == nil {
			cmd.Process.Signal(sig)
			return
		}
		syscall.Kill(-rp.cmd.Process.Pid, sig)
	}
}

// done tells the reaper that nettrap ends normally: the group lives on
// (what the command left behind is cut off from the network, not killed)
// and the reaper exits.
func (rp *reaper) done() {
	if rp == nil {
		return
	}
	rp.w.WriteString("done")
	rp.w.Close()
	// Not waited for: the word is in the pipe whether or not nettrap is
	// still there when the reaper reads it, and nettrap ends right after
	// (whoever adopts the reaper then reaps it).
	rp.cmd.Process.Release()
}

// Reaper is the reaper's main: wait for EOF on fd 3; without "done"
// first, kill the process group (the command's tree, and this process).
// It returns the status to exit with.
func Reaper() int {
	// The group's signals are for the command; a reaper must outlive
	// them to do its job.
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT, syscall.SIGHUP,
		syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGPIPE, syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU)
	b, err := io.ReadAll(os.NewFile(3, "nettrap"))
	if err == nil && string(b) == "done" {
		return 0
	}
	syscall.Kill(-os.Getpid(), syscall.SIGKILL)
	return 1
}

// inTerminalForeground: one of nettrap's standard streams is a terminal
// whose foreground process group is nettrap's.
func inTerminalForeground() bool {
	pgrp := unix.Getpgrp()
	for fd := 0; fd <= 2; fd++ {
		if fg, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP); err == nil && fg == pgrp {
			return true
		}
	}
	return false
}

// dieWithGoCommand: a nettrap that an outer nettrap's go command started
// (go test -exec) dies with that go command. The outer's reaper kills the
// go command's group, this nettrap included, but in a terminal's
// foreground there is no reaper; then the chain of PR_SET_PDEATHSIG
// (outer nettrap, go command, this nettrap, the test binary) does it. A go
// command gone before the prctl is seen in the parent check after it:
// then the run ends at once, with status 125 and nothing to say.
func dieWithGoCommand() error {
	if !gotest.ParentIsGo() {
		return nil
	}
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0); err != nil {
		return nil
	}
	if !gotest.ParentIsGo() {
		return &ExitError{Code: ExitCantRun}
	}
	return nil
}
