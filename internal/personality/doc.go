// Package personality dispatches nettrap's re-exec personalities: the
// programs a nettrap binary (or a test binary linking the supervisor or
// the run) becomes when it is started again under a special argv[0].
// The ptrace engine's stub and waker (supervisor/internal/ptracestub)
// and the run's reaper (run) are personalities; each package registers
// its own with Register, from its init, and every binary that may start
// them calls Init first thing: main of cmd/nettrap and of
// bench/internal/floor, TestMain of the supervisor's and the run's
// tests.
//
// A binary that starts the ptrace engine or the reaper but never calls
// Init would, re-exec'd, run its own main again (a test binary all its
// tests, which start the engine again, recursively). So Dispatches says
// whether Init was called, and the supervisor refuses the ptrace engine
// (and the run goes without a reaper) when it was not.
//
// It wraps github.com/moby/sys/reexec's registry and dispatch, keeping
// what nettrap needs that the library does not do: the main goroutine on
// the main thread until Init (the stub must run there), a personality's
// status as the process's, an empty argv, and the record of the call.
// nettrap starts its personalities itself (os.Executable, its own
// SysProcAttr), not with reexec.Command or reexec.Self: see Register.
package personality
