package landlock

import (
	"errors"
	"fmt"
	"os"
	"os/exec"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/internal/personality"
)

// StubArgv0 is the personality that puts a command in a domain: it
// restricts its main thread and execs the command, which keeps the
// domain and nothing else of the stub.
//
// A nettrap that must stay reachable by nothing in the domain uses it
// instead of restricting a thread of its own: a thread in the domain
// lives as long as the command it forked (PR_SET_PDEATHSIG watches that
// thread), and through /proc/PID/task/TID/mem it would let the domain
// into the process it belongs to. The supervisor may do so (it is
// non-dumpable, see supervisor.Start); an inner nettrap, which its outer
// must be able to inspect, may not.
const StubArgv0 = personality.Prefix + "landlock"

func init() {
	personality.Register(StubArgv0, func() int { return runStub(os.Args[1:]) })
}

// Exit statuses of a stub that could not start the command, as a shell's.
const (
	stubCannotExec = 126
	stubNotFound   = 127
)

// Wrap makes cmd start through the stub, in a domain of p; with Kind
// None it leaves cmd as it is. It needs a binary that dispatches the
// personalities (personality.Init).
func (p Plan) Wrap(cmd *exec.Cmd) error {
	if p.Kind == None {
		return nil
	}
	if err := personality.Check(); err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	if cmd.Err != nil {
		return cmd.Err
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("landlock: find the nettrap executable: %w", err)
	}
	cmd.Path, cmd.Args = self, append([]string{StubArgv0, p.Arg(), cmd.Path}, cmd.Args...)
	return nil
}

// runStub is the stub: args are the plan (Plan.Arg), the command's path
// and its argv. It runs on the main thread (personality.Init), the one
// whose credentials the exec keeps.
func runStub(args []string) int {
	if len(args) < 3 {
		fmt.Fprintln(os.Stderr, "nettrap: landlock stub: missing arguments")
		return stubCannotExec
	}
	p, err := ParseArg(args[0])
	if err == nil {
		err = p.Restrict()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "nettrap: cannot start %s: %v\n", args[2], err)
		return stubCannotExec
	}
	err = unix.Exec(args[1], args[2:], os.Environ())
	fmt.Fprintf(os.Stderr, "nettrap: cannot start %s: %v\n", args[2], os.NewSyscallError("execve", err))
	if errors.Is(err, unix.ENOENT) {
		return stubNotFound
	}
	return stubCannotExec
}
