package supervisor

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/bpf"
)

// The ptrace engine starts the command through a stub: a copy of the
// binary that links this package (nettrap, or a test binary), started
// under argv[0] stubArgv0. Why: the tracer must be attached before the
// command makes its first call, and the command's real parent must not
// be the tracer's thread (the tracer waits for any of its children, and
// would take the command's exit from exec.Cmd.Wait). So another thread
// starts the stub untraced and unfiltered, the tracer seizes it while it
// waits on a pipe, then writes it the filter; the stub installs it on
// its own thread and execs the command, traced from its first
// instruction.
//
// The waker is a second copy, started by the tracer's thread under
// wakerArgv0, that only pauses: a decision made on another goroutine
// stops it with SIGSTOP, and the tracer, blocked in wait4, wakes (see
// ptrace.go).
const (
	stubArgv0  = "nettrap-ptrace-stub"
	wakerArgv0 = "nettrap-ptrace-waker"
)

func init() {
	if len(os.Args) == 0 {
		return
	}
	switch os.Args[0] {
	case stubArgv0:
		os.Exit(runStub(os.Args[1:]))
	case wakerArgv0:
		for {
			unix.Pause()
		}
	}
}

// Exit statuses of a stub that could not start the command, as a shell's.
const (
	stubCannotExec = 126
	stubNotFound   = 127
	stubNoFilter   = 125
)

// runStub is the stub: args are the pipe's fd, the command's path and
// its argv.
func runStub(args []string) int {
	runtime.LockOSThread() // the filter goes on this thread, which execs
	if len(args) < 3 {
		fmt.Fprintln(os.Stderr, "nettrap: ptrace stub: missing arguments")
		return stubNoFilter
	}
	fd, err := strconv.Atoi(args[0])
	if err != nil {
		fmt.Fprintf(os.Stderr, "nettrap: ptrace stub: bad pipe %q\n", args[0])
		return stubNoFilter
	}
	prog, err := readStubPipe(os.NewFile(uintptr(fd), "nettrap-ptrace-pipe"))
	if err != nil {
		fmt.Fprintf(os.Stderr, "nettrap: ptrace stub: %v\n", err)
		return stubNoFilter
	}
	if err := bpf.InstallTrace(prog); err != nil {
		fmt.Fprintf(os.Stderr, "nettrap: ptrace stub: %v\n", err)
		return stubNoFilter
	}
	err = unix.Exec(args[1], args[2:], os.Environ())
	fmt.Fprintf(os.Stderr, "nettrap: cannot start %s: %v\n", args[2], err)
	if errors.Is(err, unix.ENOENT) {
		return stubNotFound
	}
	return stubCannotExec
}

// readStubPipe reads the filter: its length in instructions, then the
// instructions. EOF before a whole program: the supervisor gave up (it
// could not attach), and the command must not run.
func readStubPipe(f *os.File) ([]unix.SockFilter, error) {
	defer f.Close()
	var n uint32
	if err := binary.Read(f, binary.NativeEndian, &n); err != nil {
		return nil, fmt.Errorf("no filter from the supervisor: %w", err)
	}
	if n == 0 || n > unix.BPF_MAXINSNS {
		return nil, fmt.Errorf("bad filter length %d", n)
	}
	b := make([]byte, int(n)*len(stubProgramBytes(make([]unix.SockFilter, 1))))
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, fmt.Errorf("short filter from the supervisor: %w", err)
	}
	return stubProgram(b), nil
}

// writeStubPipe sends prog to the stub.
func writeStubPipe(f *os.File, prog []unix.SockFilter) error {
	b := binary.NativeEndian.AppendUint32(nil, uint32(len(prog)))
	b = append(b, stubProgramBytes(prog)...)
	_, err := f.Write(b)
	return err
}
