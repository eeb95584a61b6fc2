// Package ptracestub is the ptrace engine's two re-exec'd personalities:
// the stub (argv[0] StubArgv0), which waits to be traced, installs the
// filter it was given in its arguments (EncodeProgram) and execs the
// command; and the waker (WakerArgv0), which only pauses until killed.
// Both are registered with internal/personality from this package's
// init, and run when the binary's main or TestMain dispatches
// (personality.Init), so every binary that links the supervisor and
// dispatches can be re-exec'd as either; the supervisor refuses the
// ptrace engine in one that does not.
package ptracestub
