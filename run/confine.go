package run

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"

	"github.com/nettrap/nettrap/audit"
	"github.com/nettrap/nettrap/classify"
	"github.com/nettrap/nettrap/dnssink"
	"github.com/nettrap/nettrap/gotest"
	"github.com/nettrap/nettrap/guard"
	"github.com/nettrap/nettrap/policy"
	"github.com/nettrap/nettrap/sealns"
	"github.com/nettrap/nettrap/supervisor"
)

// confined is a run under the supervisor: a command (Command, Generic)
// or a Go test binary (TestBinary).
type confined struct {
	o Options
	g *guard.Guard
	// closeAudit closes the audit log and the DNS sinkhole; a second
	// call does nothing and returns the first one's error.
	closeAudit func() error
	bin        *gotest.Binary // the test binary's wiring; nil for a command
	hub        *outer         // the hub of a Command; nil when there is none
	// own is the log and summary of a test binary run directly
	// (testbinary.go); nil otherwise.
	own    *binaryRun
	cmdEnv []string // the command's environment, when the hub set it
	// netns is the network namespace --sealed runs the command in
	// (sealednetns.go); nil for none.
	netns *sealns.Netns
	// logPath is the run's audit log; "" for none.
	logPath string
	// execLog is the log of go test -exec with none named
	// (auditexec.go), made at the first finding; "" otherwise.
	execLog string
}

// runConfined runs the command under the supervisor: set up, start and
// wait, then end the run (finish), whose status is the one to exit with.
// What the setup acquires, the deferred release gives back on every path;
// the signal forwarder and the reaper are given back before it, once the
// run is over.
func runConfined(o Options) error {
	if code, err := lookCommand(o.Argv[0]); err != nil {
		return cannotExec(code, "%v", err)
	}
	c := &confined{o: o}
	defer c.release()
	if err := c.setup(); err != nil {
		return err
	}
	cmd, err := c.command()
	if err != nil {
		return err
	}
	// Catch the signals before the child exists, so none is lost; the
	// command's tree dies with nettrap until the run is over.
	fw := catchSignals()
	defer fw.stop()
	rp := startReaper()
	defer rp.done()
	rp.join(cmd)
	status, err := c.supervise(cmd, fw, rp)
	if err != nil {
		return err
	}
	return c.finish(status)
}

// setup readies the guard, the audit log, and the attribution: the test
// binary's tracker, or the hub of a command. What it got before an error
// is in c, for release.
func (c *confined) setup() error {
	o := c.o
	if o.Kind == TestBinary && o.AuditLog != "" && !filepath.IsAbs(o.AuditLog) && gotest.ParentIsGo() {
		// go test runs each test binary in its package directory: a
		// relative log would be one file per package, each with its own
		// run id.
		return cantRun("%s %q is relative, but go test -exec runs each test binary in its own package directory (one log per package): give an absolute path, e.g. %s=$PWD/%s, or run nettrap -- go test, which makes it absolute",
			o.Names.Source("audit-log"), o.AuditLog, o.Names.Var("audit-log"), o.AuditLog)
	}
	if plainExec(o) && o.Summary != "stderr" && o.Summary != "off" && !filepath.IsAbs(o.Summary) {
		// Each package's summary is appended to it (execSummary).
		return cantRun("%s %q is relative, but go test -exec runs each test binary in its own package directory (one file per package): give an absolute path, e.g. %s=$PWD/%s",
			o.Names.Source("summary"), o.Summary, o.Names.Var("summary"), o.Summary)
	}
	logPath := o.AuditLog
	if o.Kind == Command || o.Kind == GoTest {
		h, err := prepareOuter(o)
		if err != nil {
			return err
		}
		if c.hub = h; h != nil {
			logPath = h.log.path
		} else if o.Kind == GoTest {
			return cantRun("go test needs the hub to name its tests and keep its cache sound; use --cache=off (go test -exec) where it cannot be made")
		}
	}
	if directBinary(o) {
		b, err := prepareBinaryRun(o)
		if err != nil {
			return err
		}
		if c.own = b; b != nil {
			logPath = b.log.path
		}
	}
	execLog, err := execAuditLog(o)
	switch {
	case err != nil && o.Policy.Mode == policy.Audit:
		// The log is where audit mode's findings go: without it they
		// would be lost, as go test hides a passing package's output.
		return cantRun("%v", err)
	case err != nil:
		// The lines in the test output are the verdicts; the log only
		// keeps them.
		fmt.Fprintf(os.Stderr, "nettrap: %v; the package's findings are not kept (--audit-log FILE names a log)\n", err)
	}
	if execLog != "" {
		logPath, c.execLog = execLog, execLog
	}
	c.logPath = logPath
	c.netns = sealedNetns(o, c.notices())
	if c.g, c.closeAudit, err = newGuard(o, logPath, execLog != "", c.netns); err != nil {
		return cantRun("%v", err)
	}
	c.g.Keep = c.reportsToGitHub()
	if o.Kind == TestBinary {
		markRan(o.OuterRun)
		if c.bin, err = gotest.NewBinary(o.Argv, o.Package, os.Stdout, os.Stderr, o.AllowTests, o.Policy.Sealed); err != nil {
			return cantRun("%v", err)
		}
		c.g.Attribution = c.bin.Tracker
	}
	return nil
}

// release gives back what the run holds, whichever way it ends, in this
// order: the hub's socket, so that no inner adds a record to a closed
// log; the audit log and the DNS sinkhole; then the hub's files, the
// run's directory after the log in it is closed. At the end of a run
// finish has closed the socket and the log already (and checked the
// log's error, which is lost here) and settled the directory: then
// release closes the summary file at most.
func (c *confined) release() {
	c.hub.close()
	if c.closeAudit != nil {
		c.closeAudit()
	}
	c.hub.drop()
	c.own.drop()
	c.netns.Close()
}

// command is the command to start: the test binary with its pipe, or a
// command in the environment of the hub.
func (c *confined) command() (*exec.Cmd, error) {
	argv := c.o.Argv
	if c.bin != nil {
		argv = c.bin.Argv
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if c.bin != nil {
		cmd.Stdout, cmd.Stderr = c.bin.Output, c.bin.Output
		cmd.Env = gotest.Env(os.Environ())
	}
	if c.hub != nil {
		env, err := c.hub.listen(c.o, c.g)
		if err != nil && c.o.Kind == GoTest {
			return nil, cantRun("%v", err)
		}
		if err != nil {
			// The run goes on without the hub: its files go now.
			fmt.Fprintf(os.Stderr, "nettrap: go test inside will not name tests: %v (set TMPDIR to a writable directory)\n", err)
			c.hub.drop()
			c.hub = nil
		} else {
			cmd.Env, c.cmdEnv = env, env
		}
	}
	return cmd, nil
}

// supervise starts the command under the supervisor, forwards signals
// to it and waits: the command's status.
func (c *confined) supervise(cmd *exec.Cmd, fw *forwarder, rp *reaper) (int, error) {
	so := supervisor.Options{Decider: c.g}
	if c.o.Kind == GoTest || c.wrapsInTree() {
		var err error
		if so, err = c.execSupervision(); err != nil {
			return 0, cantRun("%v", err)
		}
	}
	so.Emulate, so.Engine, so.Userns, so.SealedNetns = c.o.Emulate, c.o.Engine, c.o.Userns, c.netns
	so.Sealed = c.o.Policy.Sealed
	so.ResolverSockets = c.g.Resolvers.UnixSockets
	so.Landlock = treeDomain(c.o, c.notices())
	if c.hub != nil || c.own != nil {
		// The start notices (engine fallback, emulation, user
		// namespace) go where the summary goes: a consumer that takes
		// every stderr line for an error (gotestsum --raw-command) gets
		// none with --summary=FILE or off.
		so.Notices = c.notices()
	}
	sess, err := supervisor.Start(cmd, so)
	if c.bin != nil {
		c.bin.Output.Close() // the child has its copy; EOF comes when it is done
	}
	if err != nil {
		return 0, startError(c.o, err)
	}
	if c.bin != nil {
		c.bin.Started(cmd.Process)
	}
	fw.forward(rp.toGroup(cmd))
	waitErr := sess.Wait()
	c.g.EndLookups()
	status := sessionStatus(sess, waitErr)
	for _, e := range sess.Errors() {
		fmt.Fprintf(os.Stderr, "nettrap: supervisor: %v\n", e)
	}
	return status, nil
}

// finish ends the run: the test binary's findings, the audit log, the
// summary of a hub's go test runs; the status stays the command's unless
// nettrap failed a test or itself.
func (c *confined) finish(status int) error {
	if c.bin != nil {
		status = c.bin.Finish(status, c.g.WriteRecord)
	} else {
		status = genericStatus(status, c.g.Counts().Denied)
	}
	// No inner can add records once the hub is closed: the log has its
	// last record, and is closed here, before the summary reads it, its
	// error failing the run (a full disk may show only then).
	c.hub.end()
	c.own.end()
	if err := c.closeAudit(); err != nil {
		return cantRun("%v", err)
	}
	if errs := c.g.AuditErrors(); len(errs) > 0 {
		return cantRun("the audit log is incomplete (%d records could not be written; they are printed above): %v", len(errs), errs[0])
	}
	if c.execLog != "" && c.o.Policy.Mode == policy.Audit {
		sayExecAuditLog(c.execLog, c.g.Audit, os.Stderr)
	}
	if plainExec(c.o) {
		c.sumUpPackage()
	}
	if c.reportsToGitHub() {
		reportBinaryToGitHub(c.o, c.g.Records())
	}
	if c.hub != nil {
		status = c.hub.finish(c.o, status)
	}
	if c.own != nil {
		status = c.own.finish(c.o, status)
	}
	return exit(status)
}

// sumUpPackage prints the summary of the package's findings under go
// test -exec, where no nettrap sums the run up (auditexec.go): on stderr,
// the package's output, or appended to --summary=FILE; then prunes the
// per-go-command logs. A failure to print is said, and fails nothing:
// the lines are in the test output, the records in the log.
func (c *confined) sumUpPackage() {
	if c.execLog != "" {
		defer pruneExecLogs(filepath.Dir(c.execLog))
		if !c.g.Audit.Opened() {
			return // nothing was recorded: no log, nothing to sum up
		}
	}
	if c.logPath == "" || c.o.Summary == "off" {
		return
	}
	var w io.Writer = os.Stderr
	if c.o.Summary != "stderr" {
		f, err := os.OpenFile(c.o.Summary, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			fmt.Fprintf(os.Stderr, "nettrap: summary: %v\n", err)
			return
		}
		defer f.Close()
		w = f
	}
	if err := execSummary(w, c.logPath, c.o.RunID, c.bin.Tracker.Package); err != nil {
		fmt.Fprintf(os.Stderr, "nettrap: summary: %v\n", err)
	}
}

// genericStatus is the status of a command that is not a Go test binary:
// its own, or 1 when it exited 0 although nettrap denied an attempt (the
// command swallowed the error; docs/audit.md#exit-status), so that CI sees
// the denial.
func genericStatus(status, denied int) int {
	if status == 0 && denied > 0 {
		fmt.Fprintf(os.Stderr, "nettrap: the command exited 0, but %d network attempt(s) were denied (see above); exiting 1\n", denied)
		return 1
	}
	return status
}

// testsByGoTest says whether go test started the test binaries a run of
// kind sees (parentIsGo: nettrap's parent is the go command, as under go
// test -exec), so that advice uses the flags the user typed. A command
// run names tests only of the go test runs inside it.
func testsByGoTest(kind Kind, parentIsGo bool) bool {
	switch kind {
	case GoTest, Command, InnerGoTest:
		return true
	case TestBinary, InnerTestBinary:
		return parentIsGo
	}
	return false
}

// newGuard is the guard of the run, writing to the audit log at logPath
// ("" for none; made at its first record when lazy); closeAudit closes
// the log and the DNS sinkhole, once however often it is called. The
// sinkhole listens in netns when there is one (the command's loopback).
func newGuard(o Options, logPath string, lazy bool, netns *sealns.Netns) (g *guard.Guard, closeAudit func() error, err error) {
	ns, err := classify.LoadResolvConf(o.ResolvConf)
	if err != nil {
		return nil, nil, fmt.Errorf("read nameservers: %w", err)
	}
	pol := o.Policy
	g = &guard.Guard{
		Policy:    &pol,
		Resolvers: &classify.Resolvers{Nameservers: ns, UnixSockets: classify.DefaultResolverSockets()},
		Messages:  os.Stderr,
		RunID:     o.RunID,
		GoTest:    testsByGoTest(o.Kind, gotest.ParentIsGo()),
	}
	var log *audit.Writer
	switch {
	case lazy:
		log = audit.OpenOnFirstWrite(logPath)
		g.Audit = log
	case logPath != "":
		if log, err = audit.Open(logPath); err != nil {
			return nil, nil, err
		}
		g.Audit = log
	}
	var sink *dnssink.Sink
	if o.Emulate != supervisor.EmulateOff {
		// Blocked lookups go to a sinkhole that names them (guard/dns.go);
		// where it cannot listen, they fail with the errno as before.
		listen := func() (err error) { sink, err = dnssink.Listen(); return err }
		if netns != nil {
			err = netns.Do(listen)
		} else {
			err = listen()
		}
		if err == nil {
			g.Sink = sink
		}
	}
	return g, sync.OnceValue(func() error {
		if sink != nil {
			sink.Close()
		}
		if log != nil {
			return log.Close()
		}
		return nil
	}), nil
}
