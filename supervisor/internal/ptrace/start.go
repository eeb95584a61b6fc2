package ptrace

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/bpf"
	"github.com/nettrap/nettrap/decision"
	"github.com/nettrap/nettrap/supervisor/internal/answer"
	"github.com/nettrap/nettrap/supervisor/internal/capless"
	"github.com/nettrap/nettrap/supervisor/internal/emulate"
	"github.com/nettrap/nettrap/supervisor/internal/errlog"
	"github.com/nettrap/nettrap/supervisor/internal/namespace"
	"github.com/nettrap/nettrap/supervisor/internal/ptracestub"
	"github.com/nettrap/nettrap/supervisor/internal/tracee"
)

// ErrNoPtrace wraps every reason the ptrace engine cannot work here
// (supervisor.ErrNoPtrace).
var ErrNoPtrace = errors.New("the ptrace engine is unavailable")

// Trace is the tracer's thread: it starts the waker, seizes the stub,
// then serves stops until stopped.
func (tr *Tracer) Trace(self string, pid int, seized chan<- error) {
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

// Wait is the engine's Wait (supervisor's engine interface). The tracer reaps the command (any Wait on a
// tracee from this process would take the tracer's stops), then
// exec.Cmd.Wait releases what Start took; it finds no child left.
func (tr *Tracer) Wait(cmd *exec.Cmd, reaped chan struct{}) error {
	select {
	case <-tr.mainDone:
	case <-tr.loopDone:
		// The tracer failed (its errors say why) and took the command
		// with it; the command is untraced now, and Cmd.Wait reaps it.
		cmd.Process.Kill()
		err := cmd.Wait()
		tr.inflight.Wait()
		tr.CloseStopped()
		close(reaped)
		return err
	}
	cmd.Wait()
	tr.stop()
	<-tr.loopDone
	tr.inflight.Wait()
	// Calls still waiting when the tracer stopped: their tracees were
	// killed with it (the loop is over: its maps are ours now).
	tr.stats.Vanished.Add(uint64(len(tr.current)))
	tr.CloseStopped()
	if tr.capMaker != nil {
		tr.capMaker.Close()
	}
	close(reaped)
	if tr.status.Exited() && tr.status.ExitStatus() == 0 {
		return nil
	}
	return fmt.Errorf("command %s", describeStatus(tr.status))
}

// WaitStatus is the engine's WaitStatus: the tracer reaped the command.
func (tr *Tracer) WaitStatus() (syscall.WaitStatus, bool) {
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

// NewTracer is a tracer for decider d; syscalls: a listener above may
// hide the calls from the TRACE stops (supervisor.EngineChoice.EntryStops),
// so every syscall stops at entry and tprog says which to decide.
func NewTracer(d decision.Decider, syscalls bool, tprog []unix.SockFilter) (*Tracer, error) {
	tr := &Tracer{decider: d, syscalls: syscalls, exitRet: map[int]int64{},
		entryDecided: map[int]bool{}, current: map[int]uint64{}, tracees: map[int]bool{},
		handOvers: map[int]*handOver{}, plainOnce: map[int]bool{}, mainDone: make(chan struct{}), loopDone: make(chan struct{})}
	if tr.syscalls {
		var err error
		if tr.eval, err = bpf.NewEvaluator(tprog); err != nil {
			return nil, err
		}
	}
	return tr, nil
}

// SetUp wires the tracer to the session's counters and errors, makes its
// wake pipe, and makes emu, if any, the tracer's.
func (tr *Tracer) SetUp(stats *answer.Stats, errs *errlog.Log, emu *emulate.Emulator) error {
	tr.stats, tr.errs = stats, errs
	tr.vmRead.Store(true)
	if err := unix.Pipe2(tr.stopped[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		return os.NewSyscallError("pipe2", err)
	}
	if emu != nil {
		emu.Stop, emu.Report = tr.stopped[0], tr.report
		tr.emu = emu
	}
	return nil
}

// SetNetns gives the tracer the starting namespace and its
// capability-free thread (nil if it could not be made); netnsFD names
// the namespace (see ownerAbove).
func (tr *Tracer) SetNetns(netns *namespace.Starting, m *capless.Maker, netnsFD int) {
	tr.netns = netns
	tr.capMaker = m
	tr.noHandOver = ownerAbove(netnsFD)
}

// SkipHandOver turns the netlink hand-over off before the command starts
// (supervisor's ptraceDomain: the command's Landlock domain would refuse
// it): the confined threads' netlink sockets keep their capabilities.
func (tr *Tracer) SkipHandOver() { tr.noHandOver = true }
