package personality

import (
	"errors"
	"os"
	"runtime"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/moby/sys/reexec"
)

// The ptrace engine's stub must run on the main thread: the tracer seizes
// the stub's pid, which is its main thread's tid, and the stub installs
// the filter on the thread that is traced. Until main.main the runtime
// keeps the main goroutine there (package inits run locked to it); it
// lets go of it then, unless an init locked it too. So this init locks
// it, for every binary that links the dispatch, and Init runs the
// personality on the main goroutine still on the main thread, and
// unlocks once it is known that none is to run (main then runs as it
// would have). A binary that never calls Init keeps its main goroutine
// on the main thread, which costs it nothing but a thread.
//
// The same init makes a personality non-dumpable (see Prefix), before
// any package of nettrap's has initialized: the first code of the
// process that is not the runtime's or the standard library's.
func init() {
	runtime.LockOSThread()
	if len(os.Args) > 0 && dumpsNot(os.Args[0]) {
		unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	}
}

// Prefix begins every personality's name (Register refuses others), so
// that this package's init knows a personality before the packages that
// register them have initialized. Every personality but TracedStub is
// made non-dumpable there: the reaper and the waker are fresh execs of
// nettrap that live as long as the run, outside the confined tree, and a
// process of the same user could otherwise open their /proc/PID/mem and
// write code into them (ptrace access to a non-dumpable process needs
// CAP_SYS_PTRACE over its user namespace, which the tree never has).
const Prefix = "nettrap-"

// TracedStub is the ptrace engine's stub, the one personality that stays
// dumpable: its tracer seizes it after it starts (a non-dumpable stub
// could not be seized by a tracer without CAP_SYS_PTRACE), it becomes
// the confined command at its exec (which makes a process dumpable
// again anyway), and it puts itself in the tree's Landlock domain first.
const TracedStub = Prefix + "ptrace-stub"

func dumpsNot(argv0 string) bool {
	return strings.HasPrefix(argv0, Prefix) && argv0 != TracedStub
}

// dispatched records that Init was called.
var dispatched atomic.Bool

// ErrNotDispatched is why a binary that does not call Init may not start
// a personality: it would run the binary's main again instead.
var ErrNotDispatched = errors.New("this binary does not dispatch nettrap's re-exec personalities (personality.Init in main or TestMain)")

// Register makes name, as argv[0], a personality: a binary started so
// runs main instead of its own main (from Init) and exits with the status
// main returns. Call it from the registering package's init; a name
// registered twice, or one not beginning with Prefix, panics.
//
// Start a personality with exec.Cmd{Path: os.Executable(), Args:
// []string{name, ...}} and the SysProcAttr it needs, not reexec.Command:
// that sets Pdeathsig to SIGTERM, tied to whichever thread forks, where
// the reaper must outlive nettrap (its job is to act when nettrap dies)
// and the stub and waker take SIGKILL from the one locked thread that
// starts them. Nor reexec.Self ("/proc/self/exe" on Linux): a child
// exec'd through that link is named "exe" (its comm, what ps, top and
// the kernel's messages show, and what a failed start names), where the
// real path keeps the binary's name.
func Register(name string, main func() int) {
	if !strings.HasPrefix(name, Prefix) {
		panic("personality: " + name + " does not begin with " + Prefix)
	}
	reexec.Register(name, func() { os.Exit(main()) })
}

// Init runs the personality os.Args[0] names, if one is registered; it
// then never returns (the personality's status is the process's). Call
// it first thing in main, or in TestMain, on the main goroutine: it
// dispatches on argv[0] exactly as it was exec'd (reexec.Init does), and
// records that this binary dispatches (Dispatches).
//
// Unlike reexec.Init it reports nothing: a personality is a whole
// program, so it exits here, rather than hand a true back to a caller
// that would have to remember to exit (a TestMain that forgot would run
// the tests after the reaper's job).
func Init() {
	dispatched.Store(true)
	// reexec.Init reads os.Args[0]: a process exec'd with an empty argv
	// has none, and is no personality.
	if len(os.Args) > 0 {
		reexec.Init()
	}
	runtime.UnlockOSThread() // this package's init's lock: see init
}

// Dispatches reports whether Init was called in this process, so that a
// personality started from it would run as one.
func Dispatches() bool { return dispatched.Load() }

// Check is ErrNotDispatched when Init was not called, and nil when it
// was: what a package that starts a personality asks first.
func Check() error {
	if !Dispatches() {
		return ErrNotDispatched
	}
	return nil
}
