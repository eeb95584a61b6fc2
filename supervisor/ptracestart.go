package supervisor

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/bpf"
	"github.com/nettrap/nettrap/supervisor/internal/emulate"
	"github.com/nettrap/nettrap/supervisor/internal/ptracestub"
	"github.com/nettrap/nettrap/supervisor/internal/tracee"
)

// startPtrace starts cmd under the ptrace engine (ptrace.go): the stub is
// started by one locked thread (the parent the command's PDEATHSIG
// watches, as under the notify engine), seized and fed the filter by the
// tracer's thread.
func startPtrace(cmd *exec.Cmd, opts Options, prog []unix.SockFilter, choice EngineChoice, uc UsernsChoice, emu *emulate.Emulator, emuErr error, notices io.Writer) (*Session, error) {
	if cmd.Err != nil {
		return nil, cmd.Err
	}
	tprog, err := bpf.TraceProgram(runtime.GOARCH, prog)
	if err != nil {
		return nil, fmt.Errorf("build seccomp program: %w", err)
	}
	tr := &tracer{decider: opts.Decider, syscalls: choice.ListenerAbove, exitRet: map[int]int64{},
		entryDecided: map[int]bool{}, current: map[int]uint64{}, tracees: map[int]bool{},
		handOvers: map[int]*handOver{}, plainOnce: map[int]bool{}, mainDone: make(chan struct{}), loopDone: make(chan struct{})}
	if tr.syscalls {
		if tr.eval, err = bpf.NewEvaluator(tprog); err != nil {
			return nil, err
		}
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("%w: find the stub: %w", ErrNoPtrace, err)
	}
	stubCmd(cmd, self, tprog)
	if err := prepareCommand(cmd, uc, notices); err != nil {
		return nil, err
	}
	s := &Session{Cmd: cmd, Engine: choice, Userns: uc, Emulating: emu != nil, EmulationErr: emuErr,
		reaped: make(chan struct{}), eng: tr}
	tr.stats, tr.errs = &s.Stats, &s.errs
	tr.vmRead.Store(true)
	if err := unix.Pipe2(tr.stopped[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		return nil, os.NewSyscallError("pipe2", err)
	}
	if emu != nil {
		emu.Stop, emu.Report = tr.stopped[0], tr.report
		tr.emu = emu
	}

	started := make(chan error, 1)
	go s.forkStub(tr, started)
	if err := <-started; err != nil {
		return nil, err
	}
	seized := make(chan error, 1)
	go tr.trace(self, cmd.Process.Pid, seized)
	if err := <-seized; err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		close(s.reaped)
		tr.closeStopped()
		return nil, err
	}
	return s, nil
}

// stubCmd makes cmd start the stub, which execs what cmd named once
// traced (internal/ptracestub).
func stubCmd(cmd *exec.Cmd, self string, prog []unix.SockFilter) {
	cmd.Path, cmd.Args = self, append([]string{ptracestub.StubArgv0, ptracestub.EncodeProgram(prog), cmd.Path}, cmd.Args...)
}

// forkStub starts the stub on a locked thread, which stays until the
// command is reaped: the child's PR_SET_PDEATHSIG watches the thread that
// forked it (see Start). The thread is never unlocked: it may have lost
// CAP_SYS_ADMIN from its bounding set (userns.go), and exits instead.
func (s *Session) forkStub(tr *tracer, started chan<- error) {
	runtime.LockOSThread()
	netns, netnsFD := startingNetnsOfThread()
	tr.netns = netns
	tr.capMaker = s.caplessMaker(netns, netnsFD)
	tr.noHandOver = ownerAbove(netnsFD)
	closeFD(netnsFD)
	err := s.Userns.prepareThread()
	if err == nil {
		err = s.Cmd.Start()
	}
	if err == nil {
		s.started(netns, tr.emu)
	}
	started <- err
	if err != nil {
		return
	}
	<-s.reaped
}

// trace is the tracer's thread: it starts the waker, seizes the stub,
// then serves stops until stopped.
func (tr *tracer) trace(self string, pid int, seized chan<- error) {
	runtime.LockOSThread()
	// No UnlockOSThread: when run returns the thread exits, and with it
	// the tracing: PTRACE_O_EXITKILL kills whatever is still traced.
	waker := &exec.Cmd{Path: self, Args: []string{ptracestub.WakerArgv0}, SysProcAttr: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}}
	if err := waker.Start(); err != nil {
		seized <- fmt.Errorf("%w: start the waker: %w", ErrNoPtrace, err)
		close(tr.loopDone)
		return
	}
	tr.waker, tr.main = waker.Process.Pid, pid
	if err := tracee.Ptrace(unix.PTRACE_SEIZE, pid, 0, seizeOptions); err != nil {
		unix.Kill(tr.waker, unix.SIGKILL)
		seized <- fmt.Errorf("%w: %w", ErrNoPtrace, os.NewSyscallError("ptrace(PTRACE_SEIZE)", err))
		close(tr.loopDone)
		return
	}
	seized <- nil
	tr.run()
}

// wait implements engine. The tracer reaps the command (any wait on a
// tracee from this process would take the tracer's stops), then
// exec.Cmd.Wait releases what Start took; it finds no child left.
func (tr *tracer) wait(s *Session) error {
	select {
	case <-tr.mainDone:
	case <-tr.loopDone:
		// The tracer failed (its errors say why) and took the command
		// with it; the command is untraced now, and Cmd.Wait reaps it.
		s.Cmd.Process.Kill()
		err := s.Cmd.Wait()
		tr.inflight.Wait()
		tr.closeStopped()
		close(s.reaped)
		return err
	}
	s.Cmd.Wait()
	tr.stop()
	<-tr.loopDone
	tr.inflight.Wait()
	// Calls still waiting when the tracer stopped: their tracees were
	// killed with it (the loop is over: its maps are ours now).
	tr.stats.Vanished.Add(uint64(len(tr.current)))
	tr.closeStopped()
	if tr.capMaker != nil {
		tr.capMaker.Close()
	}
	close(s.reaped)
	if tr.status.Exited() && tr.status.ExitStatus() == 0 {
		return nil
	}
	return fmt.Errorf("command %s", describeStatus(tr.status))
}

// waitStatus implements engine: the tracer reaped the command.
func (tr *tracer) waitStatus(*Session) (syscall.WaitStatus, bool) {
	select {
	case <-tr.mainDone:
		return syscall.WaitStatus(tr.status), true
	default:
		return 0, false
	}
}

func describeStatus(ws unix.WaitStatus) string {
	if ws.Signaled() {
		return "killed by " + ws.Signal().String()
	}
	return "exited with status " + strconv.Itoa(ws.ExitStatus())
}
