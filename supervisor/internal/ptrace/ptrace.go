package ptrace

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/bpf"
	"github.com/nettrap/nettrap/decision"
	"github.com/nettrap/nettrap/supervisor/internal/answer"
	"github.com/nettrap/nettrap/supervisor/internal/capless"
	"github.com/nettrap/nettrap/supervisor/internal/emulate"
	"github.com/nettrap/nettrap/supervisor/internal/errlog"
	"github.com/nettrap/nettrap/supervisor/internal/namespace"
	"github.com/nettrap/nettrap/supervisor/internal/tracee"
)

// Tracer is the ptrace engine: the thread that traces every confined
// process and answers its trapped calls (see the package comment).
type Tracer struct {
	decider      decision.Decider
	stats        *answer.Stats
	errs         *errlog.Log
	netns        *namespace.Starting
	syscalls     bool            // decide at syscall-entry stops (a listener above)
	eval         *bpf.Evaluator  // the program, for entry stops
	vmRead       atomic.Bool     // read target memory with process_vm_readv (internal/targetmem)
	main         int             // the command's pid
	execed       bool            // the command's own exec was let through
	handshake    bool            // the stub's SIGSTOP was taken
	exitRet      map[int]int64   // return values to set at exit stops (entry denials)
	entryDecided map[int]bool    // allowed at entry: its seccomp stop follows
	waker        int             // the waker's pid
	status       unix.WaitStatus // the command's, once mainDone is closed
	mainDone     chan struct{}
	loopDone     chan struct{}
	inflight     sync.WaitGroup
	stopping     atomic.Bool
	ids          atomic.Uint64
	mu           sync.Mutex
	answers      []traceAnswer
	sleeping     bool // the tracer is (about to be) blocked in wait4
	wakerGone    bool // the waker died: the tracer polls instead
	emu          *emulate.Emulator
	capMaker     *capless.Maker    // nil when the thread could not be made
	stopped      [2]int            // pipe: readable once stopping (the emulator's watch)
	current      map[int]uint64    // the call each stopped tid waits in, by id
	tracees      map[int]bool      // every tid seen and not seen to exit
	handOvers    map[int]*handOver // netlink sockets being handed over (handover.go)
	plainOnce    map[int]bool      // the next socket(2) of tid runs as asked
	noHandOver   bool              // the hand-over failed once, or is never needed (ownerAbove): not tried
}

// traceAnswer is a decision, for the tracer to apply to the call id of
// thread tid.
type traceAnswer struct {
	tid     int
	id      uint64
	a       decision.Answer
	atEntry bool
	// ret, when set, is the call's return value: the supervisor made the
	// call (emulation, a redirect), or answers it early (internal/emulate).
	ret   *int64
	early bool
	call  *emulate.Call // the call decided, for a hand-over
	// dupSelf: an allowed pidfd_getfd on the caller's own pidfd, run as
	// the dup it is (dup.go's Tracer.dupSelf).
	dupSelf bool
}

// seizeOptions are the tracer's ptrace options: follow every child and
// thread, report seccomp stops, mark syscall stops, kill on our death.
const seizeOptions = unix.PTRACE_O_TRACESECCOMP | unix.PTRACE_O_TRACEFORK | unix.PTRACE_O_TRACEVFORK |
	unix.PTRACE_O_TRACECLONE | unix.PTRACE_O_TRACEEXEC | unix.PTRACE_O_TRACESYSGOOD | unix.PTRACE_O_EXITKILL

// run waits for stops and answers them until stop is called, then kills
// the waker. It runs on the tracer's locked thread.
func (tr *Tracer) run() {
	defer close(tr.loopDone)
	for !tr.stopping.Load() {
		if !tr.applyAnswers() {
			continue
		}
		var ws unix.WaitStatus
		opts := unix.WALL | unix.WNOTHREAD | unix.WUNTRACED
		if tr.wakerGone {
			opts |= unix.WNOHANG
		}
		pid, err := unix.Wait4(-1, &ws, opts, nil)
		tr.awake()
		switch {
		case err == unix.EINTR:
		case err != nil:
			tr.report(os.NewSyscallError("wait4", err))
			return
		case pid == 0:
			unix.Nanosleep(&unix.Timespec{Nsec: 200_000}, nil) // no waker: poll
		case pid == tr.waker:
			tr.wakerEvent(ws)
		default:
			tr.event(pid, ws)
		}
	}
	// PTRACE_O_EXITKILL kills what is still traced when this thread
	// exits; but the runtime keeps a locked thread that is the process's
	// main thread instead of letting it exit, so the kill is also made
	// here: a tracee left without its tracer would wait forever at its
	// next trapped call.
	for tid := range tr.tracees {
		unix.Kill(tid, unix.SIGKILL)
	}
	unix.Kill(tr.waker, unix.SIGKILL)
	var ws unix.WaitStatus
	unix.Wait4(tr.waker, &ws, unix.WALL|unix.WNOTHREAD, nil)
}

// applyAnswers applies the decisions made so far. It returns true when
// there were none and the tracer may block: then sleeping is set under
// the lock, so a decision posted from now on wakes it.
func (tr *Tracer) applyAnswers() bool {
	tr.mu.Lock()
	answers := tr.answers
	tr.answers = nil
	tr.sleeping = len(answers) == 0
	tr.mu.Unlock()
	for _, a := range answers {
		tr.apply(a)
	}
	return len(answers) == 0
}

func (tr *Tracer) awake() {
	tr.mu.Lock()
	tr.sleeping = false
	tr.mu.Unlock()
}

// post hands a decision to the tracer, waking it if it sleeps.
func (tr *Tracer) post(a traceAnswer) {
	tr.mu.Lock()
	tr.answers = append(tr.answers, a)
	wake := tr.sleeping
	tr.sleeping = false
	tr.mu.Unlock()
	if wake {
		tr.wake()
	}
}

// wake stops the waker: the tracer's wait4 returns.
func (tr *Tracer) wake() { unix.Kill(tr.waker, unix.SIGSTOP) }

// stop ends run.
func (tr *Tracer) stop() {
	tr.stopping.Store(true)
	unix.Write(tr.stopped[1], []byte{0})
	tr.mu.Lock()
	tr.sleeping = false
	tr.mu.Unlock()
	tr.wake()
}

// wakerEvent resumes a stopped waker. A waker that died (killed from
// outside) leaves the tracer polling: slower, never stuck.
func (tr *Tracer) wakerEvent(ws unix.WaitStatus) {
	if ws.Stopped() {
		unix.Kill(tr.waker, unix.SIGCONT)
		return
	}
	if !tr.wakerGone {
		tr.wakerGone = true
		tr.report(fmt.Errorf("the ptrace engine's waker died (%v): polling instead", ws))
	}
}

func (tr *Tracer) report(err error) { tr.errs.Add(err) }

func (tr *Tracer) CloseStopped() {
	unix.Close(tr.stopped[0])
	unix.Close(tr.stopped[1])
}

// Stop kinds in a wait status: the event in bits 16-23, the signal in
// 8-15 (SIGTRAP|0x80 for syscall stops with PTRACE_O_TRACESYSGOOD).
const syscallStopSig = unix.SIGTRAP | 0x80

// event handles one wait status of a tracee.
func (tr *Tracer) event(pid int, ws unix.WaitStatus) {
	if ws.Exited() || ws.Signaled() {
		delete(tr.tracees, pid)
		delete(tr.exitRet, pid)
		delete(tr.plainOnce, pid)
		if h := tr.handOvers[pid]; h != nil {
			tr.endHandOver(pid, h)
		}
		delete(tr.entryDecided, pid)
		if _, ok := tr.current[pid]; ok {
			tr.stats.Vanished.Add(1) // died in a call: its answer is dropped
			delete(tr.current, pid)
		}
		if pid == tr.main {
			tr.status = ws
			close(tr.mainDone)
		}
		return
	}
	if !ws.Stopped() {
		return
	}
	tr.tracees[pid] = true
	if h := tr.handOvers[pid]; h != nil && isSyscallStop(ws) && tr.handOverStop(pid, h) {
		return
	}
	sig := syscall.Signal(int(ws>>8) & 0xff)
	ev := int(ws>>16) & 0xff
	switch {
	case sig == unix.SIGTRAP && ev == unix.PTRACE_EVENT_SECCOMP:
		tr.seccompStop(pid)
	case sig == syscallStopSig:
		tr.syscallStop(pid)
	case ev == unix.PTRACE_EVENT_STOP:
		if isStopSignal(sig) {
			// Group-stop: stay stopped, but let the kernel report the
			// SIGCONT that ends it (PTRACE_LISTEN).
			tr.ptraceOK(pid, tracee.Ptrace(unix.PTRACE_LISTEN, pid, 0, 0))
			return
		}
		tr.resume(pid, 0) // a new child's first stop, or our interrupt
	case sig == unix.SIGTRAP && ev != 0:
		if ev == unix.PTRACE_EVENT_EXEC && pid == tr.main && tr.handshake {
			// The command's exec. (Seized as soon as exec.Cmd.Start
			// returns, the stub may still report its own exec: Start
			// returns when the exec closes the descriptors, before it
			// ends.)
			tr.execed = true
		}
		tr.resume(pid, 0) // fork, vfork, clone, exec, vfork-done
	case sig == unix.SIGSTOP && pid == tr.main && !tr.handshake:
		// The stub stopped itself once traced (internal/ptracestub): this
		// resume, like every other, turns on the stops the engine uses.
		tr.handshake = true
		tr.resume(pid, 0)
	default:
		tr.resume(pid, int(sig)) // signal-delivery-stop: deliver it
	}
}

// isSyscallStop tells a syscall stop or a seccomp stop.
func isSyscallStop(ws unix.WaitStatus) bool {
	sig := syscall.Signal(int(ws>>8) & 0xff)
	return sig == syscallStopSig || sig == unix.SIGTRAP && int(ws>>16)&0xff == unix.PTRACE_EVENT_SECCOMP
}

func isStopSignal(s syscall.Signal) bool {
	return s == unix.SIGSTOP || s == unix.SIGTSTP || s == unix.SIGTTIN || s == unix.SIGTTOU
}

// resume restarts a stopped tracee, to its next seccomp stop or, with a
// listener above, its next syscall stop.
func (tr *Tracer) resume(pid, sig int) {
	if tr.syscalls || tr.handOvers[pid] != nil {
		tr.ptraceOK(pid, unix.PtraceSyscall(pid, sig))
		return
	}
	tr.ptraceOK(pid, unix.PtraceCont(pid, sig))
}

// ptraceOK reports a failed request; ESRCH means the tracee died (a
// SIGKILL ends any stop): normal.
func (tr *Tracer) ptraceOK(pid int, err error) bool {
	if err == nil {
		return true
	}
	if !errors.Is(err, unix.ESRCH) {
		tr.report(fmt.Errorf("ptrace tracee %d: %w", pid, os.NewSyscallError("ptrace", err)))
	}
	return false
}
