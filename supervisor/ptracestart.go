package supervisor

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/bpf"
	"github.com/nettrap/nettrap/internal/personality"
	"github.com/nettrap/nettrap/landlock"
	"github.com/nettrap/nettrap/supervisor/internal/emulate"
	"github.com/nettrap/nettrap/supervisor/internal/ptrace"
	"github.com/nettrap/nettrap/supervisor/internal/ptracestub"
)

// startPtrace starts cmd under the ptrace engine (internal/ptrace): the stub is
// started by one locked thread (the parent the command's PDEATHSIG
// watches, as under the notify engine), seized and fed the filter by the
// tracer's thread.
func startPtrace(cmd *exec.Cmd, opts Options, prog []unix.SockFilter, choice EngineChoice, uc UsernsChoice, skipHandOver bool, emu *emulate.Emulator, emuErr error, notices io.Writer) (*Session, error) {
	if cmd.Err != nil {
		return nil, cmd.Err
	}
	// The stub and the waker are this binary re-exec'd: one that does not
	// dispatch them would run its own main instead (a test binary all its
	// tests, starting the engine again), and the tracer would wait for a
	// stub that never comes.
	if err := personality.Check(); err != nil {
		return nil, fmt.Errorf("the ptrace engine cannot start its stub: %w", err)
	}
	tprog, err := bpf.TraceProgram(runtime.GOARCH, prog)
	if err != nil {
		return nil, fmt.Errorf("build seccomp program: %w", err)
	}
	tr, err := ptrace.NewTracer(opts.Decider, choice.EntryStops, tprog)
	if err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("%w: find the stub: %w", ErrNoPtrace, err)
	}
	stubCmd(cmd, self, tprog, opts.Landlock)
	if err := prepareCommand(cmd, uc, notices); err != nil {
		return nil, err
	}
	s := &Session{Cmd: cmd, Engine: choice, Userns: uc, Emulating: emu != nil, EmulationErr: emuErr,
		reaped: make(chan struct{}), eng: ptraceEngine{tr}}
	if err := tr.SetUp(&s.Stats, &s.errs, emu); err != nil {
		return nil, err
	}

	started := make(chan error, 1)
	go s.forkStub(tr, emu, skipHandOver, started)
	if err := <-started; err != nil {
		return nil, err
	}
	seized := make(chan error, 1)
	go tr.Trace(self, cmd.Process.Pid, seized)
	if err := <-seized; err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		close(s.reaped)
		tr.CloseStopped()
		return nil, err
	}
	return s, nil
}

// stubCmd makes cmd start the stub, which execs what cmd named once
// traced, in the Landlock domain plan says (internal/ptracestub).
func stubCmd(cmd *exec.Cmd, self string, prog []unix.SockFilter, plan landlock.Plan) {
	cmd.Path, cmd.Args = self, append([]string{ptracestub.StubArgv0, ptracestub.EncodeProgram(prog), plan.Arg(), cmd.Path}, cmd.Args...)
}

// forkStub starts the stub on a locked thread, which stays until the
// command is reaped: the child's PR_SET_PDEATHSIG watches the thread that
// forked it (see Start). The thread is never unlocked: it may have lost
// CAP_SYS_ADMIN from its bounding set (userns.go), and exits instead.
func (s *Session) forkStub(tr *ptrace.Tracer, emu *emulate.Emulator, skipHandOver bool, started chan<- error) {
	runtime.LockOSThread()
	netns, netnsFD := startingNetnsOfThread()
	tr.SetNetns(netns, s.caplessMaker(netns, netnsFD), netnsFD)
	if skipHandOver {
		tr.SkipHandOver()
	}
	closeFD(netnsFD)
	err := s.Userns.prepareThread()
	if err == nil {
		err = s.Cmd.Start()
	}
	if err == nil {
		s.started(netns, emu)
	}
	started <- err
	if err != nil {
		return
	}
	<-s.reaped
}

// ptraceEngine is the tracer as Session's engine.
type ptraceEngine struct{ *ptrace.Tracer }

// wait implements engine.
func (e ptraceEngine) wait(s *Session) error { return e.Tracer.Wait(s.Cmd, s.reaped) }

// waitStatus implements engine.
func (e ptraceEngine) waitStatus(*Session) (syscall.WaitStatus, bool) { return e.Tracer.WaitStatus() }
