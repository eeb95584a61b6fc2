// Command nettrap runs a command, or a Go test binary, with outbound
// network cut off by a seccomp filter: seccomp user notification, or
// ptrace where a listener is refused (see docs/engines.md).
package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/nettrap/nettrap/gotest"
	"github.com/nettrap/nettrap/internal/personality"
	"github.com/nettrap/nettrap/policy"
	"github.com/nettrap/nettrap/run"
	"github.com/nettrap/nettrap/testexec"
)

func main() {
	// First: nettrap re-exec'd as one of its personalities (the reaper,
	// the ptrace engine's stub and waker) is that and nothing else, and
	// the stub must still be on the main thread (see internal/personality).
	personality.Init()
	stopProfile := startProfile(os.Getenv)
	code := nettrap()
	stopProfile()
	os.Exit(code)
}

// nettrap is the program: a symlink to nettrap in a test binary's place
// names no fixed argv[0] (see package testexec); anything else is the
// CLI.
func nettrap() int {
	if self, err := os.Executable(); err == nil {
		if real, ok := testexec.Wrapped(os.Args[0], self); ok {
			return wrapped(os.Args[0], real, self)
		}
	}
	return exitCode(cli(os.Args[1:], os.Getenv), os.Args[1:])
}

// wrapped runs the test binary real as nettrap was started in its place
// at path by `nettrap -- go test` (see package testexec): as the inner
// nettrap of that run, with the go command's arguments for the binary
// (none of them nettrap's). The binary is back at path before the go
// command sees the status.
func wrapped(path, real, self string) int {
	args := append([]string{"--", real}, os.Args[1:]...)
	code := exitCode(cli(args, os.Getenv), args)
	if err := testexec.Restore(path, self); err != nil {
		fmt.Fprintf(os.Stderr, "nettrap: %v\n", err)
	}
	return code
}

// cli is nettrap with args: a subcommand, or a run.
func cli(args []string, getenv func(string) string) error {
	if len(args) > 0 {
		switch args[0] {
		case "version":
			// `nettrap version --engine=ptrace` as --version does.
			args = append([]string{"--version"}, args[1:]...)
		case "help":
			printUsage(os.Stdout)
			return nil
		case "report":
			return runReport(args[1:])
		}
	}
	cfg, err := parseConfig(args, getenv)
	if err != nil {
		return cantRun("%v (see nettrap --help)", err)
	}
	switch {
	case cfg.help:
		printUsage(os.Stdout)
		return nil
	case cfg.version:
		printVersion(os.Stdout, cfg.engine, cfg.userns)
		return nil
	case len(cfg.args) == 0:
		return cantRun("no command given: nettrap [flags] -- COMMAND [ARGS...] (see nettrap --help)")
	}
	// An inner nettrap (under a go test or a hub of an outer one) sees the
	// same environment as the outer, which has warned already.
	if cfg.hub == "" && cfg.outerRun == "" {
		for _, w := range unknownVarWarnings(os.Environ()) {
			fmt.Fprintf(os.Stderr, "nettrap: %s\n", w)
		}
	}
	return run.Run(cfg.options())
}

// options are the run's: its kind, chosen from the command and from what
// an outer nettrap set, and the settings.
func (cfg *config) options() run.Options {
	o := run.Options{
		Argv: cfg.args,
		Policy: policy.Policy{Mode: cfg.mode, Rules: cfg.rules, Errno: cfg.errno,
			Sealed: cfg.sealed, AllowUnspecified: cfg.allowUnspecified, AllowUnix: cfg.allowUnix},
		AllowTests: cfg.allowTests, Emulate: cfg.emulate, Engine: cfg.engine, Userns: cfg.userns, SealedNetns: cfg.sealedNetns,
		AuditLog: cfg.auditLog, ResolvConf: cfg.resolvConf, ResolvConfGiven: cfg.resolvConfGiven,
		RunID: cfg.runID, Summary: cfg.summary, Hub: cfg.hub, OuterRun: cfg.outerRun,
		Cache: cfg.cache, Names: cfg,
	}
	o.Kind, o.Package = cfg.kind()
	return o
}

// kind chooses the kind of run: a go test, a test binary (and its
// package) or any command; inside an outer nettrap's run when it set a
// hub.
func (cfg *config) kind() (run.Kind, string) {
	goTest := !cfg.generic && gotest.TestIndex(cfg.args) > 0
	pkg, testBin := "", false
	if !cfg.generic && !goTest {
		pkg, testBin = gotest.TestPackage(cfg.args)
	}
	switch inner := cfg.hub != ""; {
	case inner && goTest:
		return run.InnerGoTest, ""
	case inner && testBin:
		return run.InnerTestBinary, pkg
	case inner:
		return run.InnerCommand, ""
	case goTest:
		return run.GoTest, ""
	case testBin:
		return run.TestBinary, pkg
	case cfg.generic:
		return run.Generic, ""
	}
	return run.Command, ""
}

func cantRun(format string, a ...any) error {
	return &run.ExitError{Code: run.ExitCantRun, Err: fmt.Errorf(format, a...)}
}

// exitCode is the status for err, whose message it prints. A nettrap that
// could not do its job under `nettrap -- go test` notes why in the run's
// audit log (run.NoteFailure).
func exitCode(err error, args []string) int {
	if err == nil {
		return 0
	}
	var e *run.ExitError
	if !errors.As(err, &e) {
		e = &run.ExitError{Code: run.ExitCantRun, Err: err}
	}
	if e.Err == nil {
		return e.Code
	}
	fmt.Fprintf(os.Stderr, "nettrap: %v\n", e.Err)
	if e.Code == run.ExitCantRun {
		run.NoteFailure(os.Getenv(envName("audit-log")), os.Getenv(envName("run-id")), testArgv(args), e.Err.Error())
	}
	return e.Code
}

// testArgv is args without nettrap's own flags in front.
func testArgv(args []string) []string {
	for i, a := range args {
		if a == "--" {
			return args[i+1:]
		}
		if !strings.HasPrefix(a, "-") {
			return args[i:]
		}
	}
	return nil
}
