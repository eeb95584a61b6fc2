// Package ptracestub is the ptrace engine's two re-exec'd personalities:
// the stub (argv[0] StubArgv0), which waits to be traced, installs the
// filter it was given in its arguments (EncodeProgram) and execs the
// command; and the waker (WakerArgv0), which only pauses until killed.
// Both take over the process from init, so every binary that links the
// supervisor can be re-exec'd as either.
package ptracestub
