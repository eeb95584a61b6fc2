package ptracestub

import (
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"runtime"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/bpf"
	"github.com/nettrap/nettrap/internal/personality"
	"github.com/nettrap/nettrap/landlock"
	"github.com/nettrap/nettrap/procfs"
)

// The ptrace engine starts the command through a stub: a copy of the
// binary that links package supervisor and dispatches nettrap's
// personalities (nettrap, or a test binary: see internal/personality),
// started under argv[0] StubArgv0 with the filter in its arguments. Why: the
// tracer must be attached before the command makes its first call, and
// the command's real parent must not be the tracer's thread (the tracer
// waits for any of its children, and would take the command's exit from
// exec.Cmd.Wait). So another thread starts the stub, untraced and
// unfiltered, and the tracer seizes it. The stub waits until it is
// traced, stops itself with SIGSTOP (the tracer, seeing that stop,
// resumes it as it resumes every tracee, with syscall stops on where
// needed), installs the filter on its own thread and execs the command,
// traced from its first instruction. Only the stub's main thread is
// traced (PTRACE_SEIZE takes one thread); its other threads never get
// the filter and die at the exec.
//
// The waker is a second copy, started by the tracer's thread under
// WakerArgv0, that only pauses: a decision made on another goroutine
// stops it with SIGSTOP, and the tracer, blocked in wait4, wakes (see
// supervisor/internal/ptrace).
const (
	StubArgv0  = personality.TracedStub
	WakerArgv0 = "nettrap-ptrace-waker"
)

// Both are registered with the dispatch (internal/personality), which
// the binary's main or TestMain runs before anything else: not started
// from this package's init, as they once were, so that a test binary's
// own roles and a main's choices are made in one place, and a binary
// that does not dispatch is refused the engine instead of re-running
// itself.
func init() {
	personality.Register(StubArgv0, func() int { return runStub(os.Args[1:]) })
	personality.Register(WakerArgv0, func() int {
		for {
			unix.Pause()
		}
	})
}

// Exit statuses of a stub that could not start the command, as a shell's.
const (
	stubCannotExec = 126
	stubNotFound   = 127
	stubNoFilter   = 125
)

// runStub is the stub: args are the filter (base64), the Landlock plan
// (landlock.Plan.Arg), the command's path and its argv. It runs from personality.Init, on the main goroutine,
// which the dispatch keeps on the main thread (locked from its init):
// the thread the tracer seizes, by the stub's pid. On another thread it
// would wait for a tracer that never comes, so it says so instead.
func runStub(args []string) int {
	runtime.LockOSThread()
	if unix.Gettid() != unix.Getpid() {
		fmt.Fprintln(os.Stderr, "nettrap: ptrace stub: not on the main thread, the one the tracer seizes (personality.Init must run on the main goroutine)")
		return stubNoFilter
	}
	if len(args) < 4 {
		fmt.Fprintln(os.Stderr, "nettrap: ptrace stub: missing arguments")
		return stubNoFilter
	}
	prog, err := decodeProgram(args[0])
	var plan landlock.Plan
	if err == nil {
		plan, err = landlock.ParseArg(args[1])
	}
	if err == nil {
		err = awaitTracer()
	}
	if err == nil {
		// The stub stays dumpable, unlike the other personalities: it
		// is the confined tree's first process (the exec makes the
		// command dumpable again whatever it was), its tracer may need
		// its memory before the exec, and a confined process outside
		// its domain cannot reach it.
		err = plan.Restrict()
	}
	if err == nil {
		err = bpf.InstallTrace(prog)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "nettrap: ptrace stub: %v\n", err)
		return stubNoFilter
	}
	err = unix.Exec(args[2], args[3:], os.Environ())
	fmt.Fprintf(os.Stderr, "nettrap: cannot start %s: %v\n", args[3], err)
	if errors.Is(err, unix.ENOENT) {
		return stubNotFound
	}
	return stubCannotExec
}

// stubTimeout bounds the wait for the tracer: a supervisor that could not
// seize the stub kills it, and one that died lets it give up.
const stubTimeout = 30 * time.Second

// awaitTracer waits until this thread is traced, then stops it: the
// tracer's answer to that stop turns on whatever stops the engine uses.
func awaitTracer() error {
	deadline := time.Now().Add(stubTimeout)
	for {
		pid, err := procfs.StatusField(procfs.ThreadSelfPath("status"), "TracerPid")
		if err != nil {
			return fmt.Errorf("read TracerPid: %w", err)
		}
		if pid != "0" {
			break
		}
		if time.Now().After(deadline) {
			return errors.New("no tracer came")
		}
		time.Sleep(50 * time.Microsecond)
	}
	return unix.Tgkill(unix.Getpid(), unix.Gettid(), unix.SIGSTOP)
}

// EncodeProgram and decodeStubProgram carry the filter in argv.
func EncodeProgram(prog []unix.SockFilter) string {
	return base64.RawStdEncoding.EncodeToString(stubProgramBytes(prog))
}

func decodeProgram(s string) ([]unix.SockFilter, error) {
	b, err := base64.RawStdEncoding.DecodeString(s)
	size := len(stubProgramBytes(make([]unix.SockFilter, 1)))
	if err != nil || len(b) == 0 || len(b)%size != 0 || len(b)/size > unix.BPF_MAXINSNS {
		return nil, fmt.Errorf("bad filter in the arguments (%d bytes, %v)", len(b), err)
	}
	return stubProgram(b), nil
}
