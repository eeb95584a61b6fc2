package supervisor

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/bpf"
	"github.com/nettrap/nettrap/decision"
	"github.com/nettrap/nettrap/landlock"
	"github.com/nettrap/nettrap/procfs"
	"github.com/nettrap/nettrap/sealns"
	"github.com/nettrap/nettrap/supervisor/internal/answer"
	"github.com/nettrap/nettrap/supervisor/internal/capless"
	"github.com/nettrap/nettrap/supervisor/internal/emulate"
	"github.com/nettrap/nettrap/supervisor/internal/errlog"
	"github.com/nettrap/nettrap/supervisor/internal/inherit"
	"github.com/nettrap/nettrap/supervisor/internal/kernel"
	"github.com/nettrap/nettrap/supervisor/internal/namespace"
	"github.com/nettrap/nettrap/supervisor/internal/notify"
)

// Options configure a confined run.
type Options struct {
	// Program is the seccomp filter; nil means bpf.Assemble(runtime.GOARCH).
	Program []unix.SockFilter
	// Decider answers intercepted calls. Required.
	Decider decision.Decider
	// ResolverSockets are the unix sockets the Decider denies as name
	// service sockets (classify.Resolvers.UnixSockets; nil: classify's
	// defaults): the kernel engine sends the connects to paths that end
	// as one of them does to the Decider, and lets every other unix
	// address through.
	ResolverSockets []string
	// Notices gets the one-line notices about inherited network sockets
	// closed before the command starts (see inherit.go); nil means
	// os.Stderr.
	Notices io.Writer
	// Emulate says whether allowed inet calls are made by the supervisor
	// (race-free) or continued in the kernel; see emulate.go.
	Emulate EmulateMode
	// TrapsExec: Program traps execve (bpf.Options.Exec); the command's
	// own exec is let through before the loop starts (firstexec.go).
	TrapsExec bool
	// Engine says which engine may confine the command (--engine);
	// Start picks one with ChooseEngine and says, on Notices, when auto
	// fell back to ptrace.
	Engine EngineMode
	// Userns says whether the command gets a user namespace of its own
	// (--userns; see userns.go). Start says on Notices when it falls
	// back to dropping CAP_SYS_ADMIN.
	Userns UsernsMode
	// SealedNetns, when set, is the network namespace the command starts
	// in (--sealed, package sealns): nettrap made it, and calls that
	// reach outside it are handed in (internal/emulate/handin.go). It
	// needs the notify engine and emulation.
	SealedNetns *sealns.Netns
	// Landlock is the domain the command starts in (package landlock):
	// nothing in the tree can then reach a process outside it.
	Landlock landlock.Plan
	// Sealed: the policy is --sealed. Under a listener above, the ptrace
	// engine then stops every syscall at entry whatever its probe saw
	// (EngineChoice.EntryStops): nothing inside may widen access, and a
	// listener's filter that reads arguments could hide calls.
	Sealed bool
}

// Session is one confined command and the supervisor answering for it.
type Session struct {
	Cmd   *exec.Cmd
	Stats Stats
	// KillableRecv tells whether the kernel took
	// SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV; SyncWakeUp whether it took
	// SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP.
	KillableRecv, SyncWakeUp bool
	// Emulating tells whether allowed inet calls are emulated; when not,
	// and not because Options said off, EmulationErr says why.
	Emulating    bool
	EmulationErr error
	// Engine is the engine that confines the command, and why.
	Engine EngineChoice
	// Userns is how the command is kept from namespaces it did not
	// make (userns.go).
	Userns UsernsChoice

	eng  engine
	errs errlog.Log
	// reaped releases the thread that forked the child (see Start).
	reaped chan struct{}
}

// engine is what a Session asks of the engine that confines its command:
// the notify engine (notifyEngine, around internal/notify) or the ptrace
// engine (the tracer of internal/ptrace). Both answer calls through one path
// (answer.go) and hold them behind one view (holder, call.go).
type engine interface {
	// wait waits for the command to exit, then stops serving: no call is
	// answered after it returns.
	wait(s *Session) error
	// status is the command's wait status once wait has returned.
	waitStatus(s *Session) (syscall.WaitStatus, bool)
}

// noSyncWakeUpEnv, set to anything, withholds
// SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP: a test-only switch, for the
// benchmarks to measure what kernels before 6.6, which lack the flag, pay.
const noSyncWakeUpEnv = "NETTRAP_TEST_NO_SYNC_WAKEUP"

// noKillableRecvEnv, set to anything, withholds
// SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (5.19+): a test-only switch,
// like noSyncWakeUpEnv, for what older kernels pay.
const noKillableRecvEnv = "NETTRAP_TEST_NO_KILLABLE_RECV"

// CPUProfileEnv names a file nettrap writes its CPU profile to (`go tool
// pprof`): a test-only switch, for work on nettrap's speed. The notify
// engine's receivers then leave their thread's signals unblocked, so that
// the profiler's SIGPROF reaches them (notify.Config.KeepSignals).
const CPUProfileEnv = "NETTRAP_TEST_CPUPROFILE"

// ErrUnsupported wraps every reason the filter cannot be installed.
var ErrUnsupported = errors.New("seccomp user notification unavailable")

// Start starts cmd confined by the filter and serves its notifications.
//
// The filter is installed on one dedicated OS thread of this process, not
// on the process: that thread sets no_new_privs, installs the filter with
// NEW_LISTENER (so the listener fd lands in our own fd table, with no need
// for pidfd_getfd, which Docker's default profile denies) and forks the
// child, which inherits the filter across fork and exec. The rest of the
// supervisor is never filtered: it must not trap its own calls.
//
// The child dies with the supervisor: it gets PR_SET_PDEATHSIG(SIGKILL)
// (unless cmd.SysProcAttr asks for another signal). The kernel sends that
// signal when the *thread* that forked the child exits, not the process
// (go.dev/issue/27505), so the filter thread does not exit after the fork
// as it could: it stays parked, locked, until Wait has reaped the child,
// and only then exits (taking the filter with it). A SIGKILLed supervisor
// loses all its threads at once, that one included, and the child gets
// its SIGKILL. The race where the supervisor is gone before the child
// has set the signal is handled by the syscall package's fork path: after
// prctl it compares getppid() with the pid of the process that forked it
// and kills itself when they differ (the child was reparented already).
// Only the child itself is covered: see run's reaper (package run) for the
// rest of its tree.
//
// Before the child exists, Start closes the inherited network sockets it
// would get (and fails if its stdio is one; see inherit.go), and makes
// this process non-dumpable (see dumpable.go).
func Start(cmd *exec.Cmd, opts Options) (*Session, error) {
	if opts.Decider == nil {
		return nil, errors.New("supervisor: no decider")
	}
	prog := opts.Program
	if prog == nil {
		var err error
		if prog, err = bpf.Assemble(runtime.GOARCH); err != nil {
			return nil, fmt.Errorf("build seccomp program: %w", err)
		}
	}
	notices := opts.Notices
	if notices == nil {
		notices = os.Stderr
	}
	var emu *emulate.Emulator
	var emuErr error
	if opts.SealedNetns != nil && opts.Emulate != EmulateOn {
		return nil, errors.New("supervisor: a network namespace of the command's own needs emulation")
	}
	if opts.Emulate != EmulateOff {
		if emuErr = ProbeEmulation(); emuErr == nil {
			emu = &emulate.Emulator{Required: opts.Emulate == EmulateOn, Notices: notices, Sealed: opts.SealedNetns}
		} else if opts.Emulate == EmulateOn {
			return nil, emuErr
		} else {
			fmt.Fprintf(notices, "nettrap: emulation unavailable (%v): allowed calls continue in the kernel, where a racing thread could change their address\n", emuErr)
		}
	}
	choice, err := ChooseEngine(opts.Engine)
	if err != nil {
		return nil, err
	}
	uc := ChooseUserns(opts.Userns)
	if uc.Method == NsNoSysAdmin {
		fmt.Fprintln(notices, uc.Notice())
	}
	if choice.Engine == EnginePtrace {
		if opts.SealedNetns != nil {
			return nil, fmt.Errorf("%w: the ptrace engine cannot hand sockets in to a network namespace of the command's own", ErrUnsupported)
		}
		choice = choice.Sealing(opts.Sealed)
		var skipHandOver bool
		uc, skipHandOver = ptraceDomain(opts.Landlock, uc, notices)
		if opts.Engine == EngineAuto {
			fmt.Fprintln(notices, choice.FallbackNotice())
		}
		return startPtrace(cmd, opts, prog, choice, uc, skipHandOver, emu, emuErr, notices)
	}
	if err := prepareCommand(cmd, uc, notices); err != nil {
		return nil, err
	}
	s := &Session{Cmd: cmd, Emulating: emu != nil, EmulationErr: emuErr, Engine: choice, Userns: uc, reaped: make(chan struct{})}
	ne := &notifyEngine{loopDone: make(chan struct{})}
	s.eng = ne
	if choice.Engine == EngineKernel {
		if prog, ne.kern, err = s.kernelStart(cmd, opts, emu); err != nil {
			return nil, err
		}
	}
	ke := ne.kern
	type started struct {
		listener int
		killable bool
		netns    *namespace.Starting
		netnsFD  int
		err      error
	}
	ch := make(chan started, 1)
	install := listenerInstall()
	go func() {
		runtime.LockOSThread()
		// No UnlockOSThread: this thread carries the filter and must exit
		// when this goroutine returns.
		// The command starts in this thread's network namespace: under
		// --sealed, the one nettrap made for it, entered before the
		// filter is installed (setns would be trapped after).
		if opts.SealedNetns != nil {
			if err := opts.SealedNetns.Enter(); err != nil {
				ch <- started{-1, false, nil, -1, err}
				return
			}
		}
		netns, netnsFD := startingNetnsOfThread()
		// The mounts before the domain: a Landlock domain may not mount.
		if ke != nil {
			if err := kernel.HideCgroups(ke.Dir()); err != nil {
				closeFD(netnsFD)
				ch <- started{-1, false, nil, -1, err}
				return
			}
		}
		// The domain before the filter: its syscalls are not the
		// filter's business, and the child inherits both.
		if err := opts.Landlock.Restrict(); err != nil {
			closeFD(netnsFD)
			ch <- started{-1, false, nil, -1, err}
			return
		}
		if err := uc.prepareThread(); err != nil {
			closeFD(netnsFD)
			ch <- started{-1, false, nil, -1, err}
			return
		}
		fd, killable, err := install(prog)
		if err != nil {
			closeFD(netnsFD)
			ch <- started{-1, false, nil, -1, fmt.Errorf("%w: %w", ErrUnsupported, err)}
			return
		}
		var fe *firstExec
		restore := func() {}
		if opts.TrapsExec {
			restore = schedulerForVfork()
			fe = startFirstExec(fd)
		}
		err = cmd.Start()
		fe.stop()
		restore()
		if err != nil {
			unix.Close(fd)
			closeFD(netnsFD)
			ch <- started{-1, false, nil, -1, err}
			return
		}
		ch <- started{fd, killable, netns, netnsFD, nil}
		// The child's parent, for PR_SET_PDEATHSIG, is this thread: keep
		// it until the child is reaped. Parked in a channel receive it
		// makes no call the filter would hand us. Then, carrying the
		// filter, it wakes the stopping receivers (internal/notify/kick.go).
		<-s.reaped
		if ne.loop != nil {
			ne.loop.Kick()
		}
	}()
	st := <-ch
	if st.err != nil {
		if ke != nil {
			ke.Stop()
		}
		return nil, st.err
	}
	s.started(st.netns, emu)
	if ke != nil {
		if err := ke.Start(); err != nil {
			cmd.Process.Kill()
			cmd.Wait()
			close(s.reaped)
			unix.Close(st.listener)
			closeFD(st.netnsFD)
			ke.Stop()
			return nil, err
		}
	}
	ne.listener, s.KillableRecv = st.listener, st.killable
	if emu != nil {
		emu.Restarts = !st.killable
	}
	s.SyncWakeUp = setSyncWakeUp(ne.listener)
	capMaker := s.caplessMaker(st.netns, st.netnsFD)
	closeFD(st.netnsFD)
	l, err := notify.New(ne.listener, notify.Config{Decider: opts.Decider, Stats: &s.Stats, Errs: &s.errs, Emu: emu,
		Netns: st.netns, Blocking: notify.Kickable(prog), RecvSpin: notify.RecvSpin(), CapMaker: capMaker,
		Restarts: !st.killable, KeepSignals: os.Getenv(CPUProfileEnv) != ""})
	if err != nil {
		if capMaker != nil {
			capMaker.Close()
		}
		cmd.Process.Kill()
		cmd.Wait()
		close(s.reaped)
		unix.Close(ne.listener)
		if ke != nil {
			ke.Stop()
		}
		return nil, err
	}
	ne.loop = l
	l.Start()
	go func() {
		defer close(ne.loopDone)
		if testHookBeforeRun != nil {
			testHookBeforeRun()
		}
		l.Run()
	}()
	return s, nil
}

// testHookBeforeRun, set by tests, delays the loop's goroutine: what must
// be ready when Start returns must not depend on it having run.
var testHookBeforeRun func()

// Wait waits for the command to exit, then stops the supervisor. Any
// descendant still running loses its supervisor: its confined calls then
// fail with ENOSYS (the kernel's answer once the listener is closed), so
// a stray daemon is cut off, never let through.
func (s *Session) Wait() error { return s.eng.wait(s) }

// WaitStatus is the command's wait status, after Wait; ok false when it
// was not reaped (Wait failed before, or was not called).
func (s *Session) WaitStatus() (ws syscall.WaitStatus, ok bool) { return s.eng.waitStatus(s) }

// notifyEngine confines with seccomp user notification: the listener,
// the loop that answers it, and the goroutine that runs the loop.
type notifyEngine struct {
	listener int
	loop     *notify.Engine
	loopDone chan struct{}
	// kern is the kernel engine's half (EngineKernel), nil otherwise.
	kern *kernel.Engine
}

// wait implements engine.
func (e *notifyEngine) wait(s *Session) error {
	err := s.Cmd.Wait()
	e.loop.Stop()   // before the kick, which only stopping receivers take
	close(s.reaped) // the child is gone: its parent thread may go too
	<-e.loopDone    // no call is received after this
	e.loop.Wait()
	unix.Close(e.listener)
	e.loop.Close()
	if e.kern != nil {
		e.kern.Stop()
	}
	return err
}

// waitStatus implements engine: the notify engine's command is reaped by
// exec.Cmd.Wait.
func (e *notifyEngine) waitStatus(s *Session) (syscall.WaitStatus, bool) {
	if s.Cmd.ProcessState == nil {
		return 0, false
	}
	ws, ok := s.Cmd.ProcessState.Sys().(syscall.WaitStatus)
	return ws, ok
}

// prepareCommand is the start-up both engines share, before the child
// exists: the inherited network sockets it would get are closed (inherit.go),
// this process is made non-dumpable (dumpable.go), the child dies with the
// thread that forks it (PR_SET_PDEATHSIG, see Start), and it is kept from
// namespaces it did not make (userns.go).
func prepareCommand(cmd *exec.Cmd, uc UsernsChoice, notices io.Writer) error {
	if err := inherit.CloseSockets(cmd, notices); err != nil {
		return err
	}
	setNotDumpable()
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	if cmd.SysProcAttr.Pdeathsig == 0 {
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	}
	uc.apply(cmd.SysProcAttr)
	return nil
}

// started is the start-up both engines share once the command runs: in a
// user namespace of its own, the network namespaces its tree makes are
// told apart from the starting one (treens.go); the emulator's peer
// checks learn the tree's root (peer.go).
func (s *Session) started(netns *namespace.Starting, emu *emulate.Emulator) {
	pid := s.Cmd.Process.Pid
	if s.Userns.Method == NsUserns && netns != nil {
		netns.SetTree(pid)
	}
	if emu != nil {
		emu.Tree.SetRoot(pid)
	}
}

// caplessMaker makes the thread without capabilities that makes netlink
// sockets and sends for the command (internal/notify/netlink.go), in the starting
// namespace; nil when it cannot, which is said: netlink calls then keep
// the target's capabilities.
func (s *Session) caplessMaker(netns *namespace.Starting, netnsFD int) *capless.Maker {
	if netns == nil {
		return nil
	}
	m, err := capless.NewMaker(netns.ID, netnsFD)
	if err != nil {
		s.errs.Add(fmt.Errorf("netlink calls keep the target's capabilities: %w", err))
		return nil
	}
	return m
}

// startingNetnsOfThread reads the calling (locked) thread's network
// namespace and opens it, for the capability-free thread to enter. nil and
// -1 when it cannot: every call then counts as made in the starting
// namespace (the strict reading), and netlink sockets are not handed over.
func startingNetnsOfThread() (*namespace.Starting, int) {
	ns, err := namespace.Read()
	if err != nil {
		return nil, -1
	}
	fd, err := unix.Open(procfs.ThreadSelfPath("ns/net"), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		fd = -1
	}
	return &ns, fd
}

func closeFD(fd int) {
	if fd >= 0 {
		unix.Close(fd)
	}
}

// Errors returns the supervisor's own errors (not the command's), for the
// caller to report: the first 16, then "and N more". It never blocks.
func (s *Session) Errors() []error { return s.errs.Take() }

// Stats counts what the engine did (answer.Stats).
type Stats = answer.Stats
