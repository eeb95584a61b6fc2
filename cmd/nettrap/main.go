// Command nettrap runs a command, or a Go test binary, with outbound
// network cut off by seccomp user notification. See README.md.
package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/nettrap/nettrap/audit"
	"github.com/nettrap/nettrap/classify"
	"github.com/nettrap/nettrap/dnssink"
	"github.com/nettrap/nettrap/gotest"
	"github.com/nettrap/nettrap/guard"
	"github.com/nettrap/nettrap/hub"
	"github.com/nettrap/nettrap/policy"
	"github.com/nettrap/nettrap/supervisor"
)

// exitCantRun is the status when nettrap itself could not run the command
// (bad flags, no seccomp), as `env` and `timeout` use 125.
const exitCantRun = 125

func main() {
	if os.Args[0] == reaperArgv0 {
		os.Exit(runReaper())
	}
	code := run(os.Args[1:])
	if code == exitCantRun {
		noteFailure(os.Args[1:])
	}
	os.Exit(code)
}

// failure is the last reason nettrap gave for not doing its job.
var failure string

func run(args []string) int {
	if len(args) > 0 {
		switch args[0] {
		case "version":
			printVersion(os.Stdout)
			return 0
		case "help":
			printUsage(os.Stdout)
			return 0
		case "report":
			return runReport(args[1:])
		}
	}
	cfg, err := parseConfig(args, os.Getenv)
	if err != nil {
		return cantRun("%v (see nettrap --help)", err)
	}
	switch {
	case cfg.help:
		printUsage(os.Stdout)
		return 0
	case cfg.version:
		printVersion(os.Stdout)
		return 0
	case len(cfg.args) == 0:
		return cantRun("no command given: nettrap [flags] -- COMMAND [ARGS...] (see nettrap --help)")
	}
	// An inner nettrap (under a go test or a hub of an outer one) sees the
	// same environment as the outer, which has warned already.
	if os.Getenv(hub.Env) == "" && os.Getenv(innerMark) == "" {
		for _, w := range unknownVarWarnings(os.Environ()) {
			fmt.Fprintf(os.Stderr, "nettrap: %s\n", w)
		}
	}
	if os.Getenv(innerMark) != "" {
		dieWithGoCommand()
	}
	if path := os.Getenv(hub.Env); path != "" {
		return runInner(cfg, path)
	}
	if i := goTestIndex(cfg.args); i > 0 && !cfg.generic {
		return runGoTest(cfg, i)
	}
	return confine(cfg)
}

func cantRun(format string, a ...any) int {
	failure = fmt.Sprintf(format, a...)
	fmt.Fprintf(os.Stderr, "nettrap: %s\n", failure)
	return exitCantRun
}

// confine runs the command under the supervisor and returns its status.
func confine(cfg *config) int {
	if code, err := lookCommand(cfg.args[0]); err != nil {
		return cannotExec(code, "%v", err)
	}
	pkg, testBin := "", false
	if !cfg.generic {
		pkg, testBin = gotest.TestPackage(cfg.args)
	}
	if testBin && cfg.auditLog != "" && !filepath.IsAbs(cfg.auditLog) && parentIsGo() {
		// go test runs each test binary in its package directory: a
		// relative log would be one file per package, each with its own
		// run id.
		return cantRun("%s %q is relative, but go test -exec runs each test binary in its own package directory (one log per package): give an absolute path, e.g. %s=$PWD/%s, or run nettrap -- go test, which makes it absolute",
			cfg.source("audit-log"), cfg.auditLog, envName("audit-log"), cfg.auditLog)
	}
	h := &outerHub{}
	if !cfg.generic && !testBin {
		// The hub only names the tests of a go test run inside the
		// command: without it (no writable temporary directory) the
		// command is confined all the same. An audit log asked for must
		// work, though.
		userLog := cfg.auditLog != ""
		hh, err := prepareHub(cfg)
		switch {
		case err != nil && userLog:
			return cantRun("%v", err)
		case err != nil:
			fmt.Fprintf(os.Stderr, "nettrap: go test inside will not name tests: %v (set TMPDIR to a writable directory)\n", err)
		default:
			h = hh
		}
	}
	g, closeAudit, err := newGuard(cfg)
	if err != nil {
		return cantRun("%v", err)
	}
	var tb *testBinary
	argv := cfg.args
	if testBin {
		markRan()
		if tb, argv, err = newTestBinary(cfg, pkg); err != nil {
			closeAudit()
			return cantRun("%v", err)
		}
		g.Attribution = tb.tracker
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if h.log.path != "" {
		env, err := h.listen(cfg, g)
		if err != nil {
			fmt.Fprintf(os.Stderr, "nettrap: go test inside will not name tests: %v (set TMPDIR to a writable directory)\n", err)
		} else {
			cmd.Env = env
			defer h.srv.Close()
		}
	}
	if tb != nil {
		// Like the go command, give the binary one pipe for both: the
		// order of its output is kept, and it all goes through the
		// tracker.
		cmd.Stdout, cmd.Stderr = tb.w, tb.w
	}
	// Catch the signals before the child exists, so none is lost.
	sigs, stopSignals := catchSignals()
	defer stopSignals()
	rp := startReaper()
	defer rp.done()
	rp.join(cmd)
	sess, err := supervisor.Start(cmd, supervisor.Options{Decider: g, Emulate: cfg.emulate})
	if tb != nil {
		tb.w.Close() // the child has its copy; EOF comes when it is done
	}
	if err != nil {
		closeAudit()
		if errors.Is(err, supervisor.ErrNoEmulation) {
			return cantRun("%v; %s needs it (Linux 5.6+; in a container, Docker's and Podman's default seccomp profiles allow pidfd_getfd only with --cap-add SYS_PTRACE)", err, emulationNeededBy(cfg))
		}
		if errors.Is(err, supervisor.ErrUnsupported) {
			return cantRun("cannot confine: %v; nettrap needs Linux 5.0+ with seccomp user notification, and a container runtime that allows seccomp(2)", err)
		}
		return cannotExec(execStatus(err), "cannot start %s: %v", cfg.args[0], err)
	}
	go forwardSignals(cmd, rp, sigs)
	waitErr := sess.Wait()
	g.EndLookups()
	status := exitStatus(cmd, waitErr)
	for _, e := range sess.Errors() {
		fmt.Fprintf(os.Stderr, "nettrap: supervisor: %v\n", e)
	}
	if tb != nil {
		status = tb.finish(status, g.WriteRecord)
	} else {
		status = genericStatus(status, g.Counts().Denied)
	}
	if h.srv != nil {
		// No inner can add records once the hub is closed.
		h.srv.Close()
	}
	if err := closeAudit(); err != nil {
		return cantRun("%v", err)
	}
	if errs := g.AuditErrors(); len(errs) > 0 {
		return cantRun("the audit log is incomplete (%d records could not be written; they are printed above): %v", len(errs), errs[0])
	}
	return h.finish(cfg, status)
}

// emulationNeededBy names what made emulation required.
func emulationNeededBy(cfg *config) string {
	if cfg.sealed {
		return cfg.source("sealed")
	}
	return cfg.source("emulate") + "=on"
}

// genericStatus is the status of a command that is not a Go test binary:
// its own, or 1 when it exited 0 although nettrap denied an attempt (the
// command swallowed the error; SPEC §7), so that CI sees the denial.
func genericStatus(status, denied int) int {
	if status == 0 && denied > 0 {
		fmt.Fprintf(os.Stderr, "nettrap: the command exited 0, but %d network attempt(s) were denied (see above); exiting 1\n", denied)
		return 1
	}
	return status
}

func newGuard(cfg *config) (*guard.Guard, func() error, error) {
	ns, err := classify.LoadResolvConf(cfg.resolvConf)
	if err != nil {
		return nil, nil, fmt.Errorf("read nameservers: %w", err)
	}
	g := &guard.Guard{
		Policy:    &policy.Policy{Mode: cfg.mode, Rules: cfg.rules, Errno: cfg.errno, Sealed: cfg.sealed, AllowUnspecified: cfg.allowUnspecified},
		Resolvers: &classify.Resolvers{Nameservers: ns, UnixSockets: classify.DefaultResolverSockets()},
		Messages:  os.Stderr,
		RunID:     cfg.runID,
	}
	if g.RunID == "" {
		g.RunID = newRunID()
	}
	closeAudit := func() error { return nil }
	if cfg.auditLog != "" {
		w, err := audit.Open(cfg.auditLog)
		if err != nil {
			return nil, nil, err
		}
		g.Audit = w
		closeAudit = w.Close
	}
	if cfg.emulate != supervisor.EmulateOff {
		// Blocked lookups go to a sinkhole that names them (guard/dns.go);
		// where it cannot listen, they fail with the errno as before.
		if sink, err := dnssink.Listen(); err == nil {
			g.Sink = sink
			closeAudit = func(closeLog func() error) func() error {
				return func() error { sink.Close(); return closeLog() }
			}(closeAudit)
		}
	}
	return g, closeAudit, nil
}

// parentIsGo: nettrap was started by the go command (as go test -exec).
func parentIsGo() bool {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", os.Getppid()))
	return err == nil && filepath.Base(exe) == "go"
}

func newRunID() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// forwardSignals passes the signals nettrap gets on to the command (its
// process group, when it has one of its own): the go command sends
// SIGQUIT to the -exec program on -timeout, and expects the test binary's
// goroutine dump.
func forwardSignals(cmd *exec.Cmd, rp *reaper, sigs <-chan os.Signal) {
	for sig := range sigs {
		rp.signal(cmd, sig.(syscall.Signal))
	}
}

// exitStatus is the command's own status, or 128+signal when a signal
// killed it, as shells report it.
func exitStatus(cmd *exec.Cmd, err error) int {
	if st := cmd.ProcessState; st != nil {
		if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return st.ExitCode()
	}
	fmt.Fprintf(os.Stderr, "nettrap: wait: %v\n", err)
	return exitCantRun
}
