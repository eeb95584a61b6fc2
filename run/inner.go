package run

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/nettrap/nettrap/audit"
	"github.com/nettrap/nettrap/gotest"
	"github.com/nettrap/nettrap/hub"
	"github.com/nettrap/nettrap/testexec"
)

// runInner is nettrap started inside a command run (Options.Hub): it is
// confined already, so it installs no filter. A test binary is run with
// attribution served to the outer nettrap; `go test` gets -exec; anything
// else just runs.
func runInner(o Options) error {
	if !hub.Confined() {
		v := o.Names.Var("hub")
		return cantRun("%s is set but this process is not under a seccomp filter: it comes from `nettrap -- COMMAND`, and only means something inside one; unset %s", v, v)
	}
	if err := hub.ServedByAncestor(o.Hub); err != nil {
		v := o.Names.Var("hub")
		return cantRun("%s is set but no nettrap run confines this process (%v): it comes from `nettrap -- COMMAND`, and only means something inside one; unset %s", v, err, v)
	}
	switch o.Kind {
	case InnerGoTest:
		argv := o.Argv
		if i := gotest.TestIndex(argv); gotest.UserExec(argv[i+1:], os.Getenv("GOFLAGS")) == "" {
			execArg, err := selfExecFlag()
			if err != nil {
				return cantRun("%v", err)
			}
			argv = gotest.WithExec(argv, i, execArg)
		}
		return runPlain(argv, toProcess)
	case InnerTestBinary:
		return runInnerTestBinary(o)
	}
	return runPlain(o.Argv, toProcess)
}

// runInnerTestBinary runs a test binary unsupervised (the outer's filter
// confines it), reads its output with the tracker, and answers the outer
// nettrap's questions from it.
func runInnerTestBinary(o Options) error {
	bin, err := gotest.NewBinary(o.Argv, o.Package, os.Stdout, os.Stderr, o.AllowTests, o.Policy.Sealed)
	if err != nil {
		return cantRun("%v", err)
	}
	// For an early return: the run closes the pipe's write end itself
	// once the binary has its copy (then a second Close does nothing).
	defer bin.Output.Close()
	markRan(o.OuterRun)
	cl, err := hub.Dial(o.Hub, bin.Tracker.Package, filepath.Base(o.Argv[0]), 0)
	if err != nil {
		return cantRun("%v (%s=%s)", err, o.Names.Var("hub"), o.Hub)
	}
	defer cl.Close()
	cl.Serve(bin.Tracker)
	cmd := exec.Command(bin.Argv[0], bin.Argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, bin.Output, bin.Output
	cmd.Env = gotest.Env(os.Environ())
	// The test binary in a Landlock domain below the go command's: the
	// go command, whose own calls are the toolchain's, this nettrap and
	// everything else outside are then out of its reach (landlock).
	if err := treeDomain(o, io.Discard).Wrap(cmd); err != nil {
		return cantRun("cannot start %s: %v", o.Argv[0], err)
	}
	status, err := startAndWait(cmd, nil, toProcess(cmd), bin.Started)
	bin.Output.Close() // the binary has its copy: EOF comes when it is done
	if err != nil {
		return cantRun("cannot start %s: %v", o.Argv[0], err)
	}
	// A call the outer was still deciding when the binary ended (another
	// thread exited the process) gets its verdict now: it must reach the
	// test's report before Finish renders the last of it.
	if !cl.Settle(hub.DefaultTimeout) {
		fmt.Fprintf(os.Stderr, "nettrap: the outer nettrap sent no verdict within %v for a call of %s; the package fails\n", hub.DefaultTimeout, bin.Tracker.Package)
		status = max(status, 1)
	}
	findings := 0
	status = bin.Finish(status, func(rec audit.Record) {
		findings++
		if err := cl.Record(rec); err != nil {
			fmt.Fprintf(os.Stderr, "nettrap: %v; the record was: %+v\n", err, rec)
		}
	})
	if status == 0 && (bin.Tracker.Refused() || findings > 0) {
		// Under `nettrap -- go test`, the go command would cache this
		// pass: the attempt (audit mode) or the finding (a stale
		// marker) would then not be seen again.
		if _, err := testexec.Uncache(o.Argv); err != nil {
			fmt.Fprintf(os.Stderr, "nettrap: %v; failing the run, which must not be cached\n", err)
			status = 1
		}
	}
	return exit(status)
}

// runPlain runs argv as it is, passing nettrap's signals on (to the
// process, or to its tree).
func runPlain(argv []string, to func(*exec.Cmd) func(syscall.Signal)) error {
	if code, err := lookCommand(argv[0]); err != nil {
		return cannotExec(code, "%v", err)
	}
	return runUnlooked(argv, to)
}

// runUnlooked is runPlain without the check of the command beforehand:
// an error comes from starting it.
func runUnlooked(argv []string, to func(*exec.Cmd) func(syscall.Signal)) error {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	status, err := startAndWait(cmd, nil, to(cmd), nil)
	if err != nil {
		return cannotExec(execStatus(err), "cannot start %s: %v", argv[0], err)
	}
	return exit(status)
}
