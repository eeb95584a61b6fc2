package run

import (
	"fmt"
	"os"
	"os/exec"

	"github.com/nettrap/nettrap/gotest"
)

// runGoTest runs `go test` unconfined, with every test binary under this
// nettrap (go test -exec), then prints the run's summary from the shared
// audit log. The status is the go command's own. The summary file and
// the run's directory are given back by defers on every path (finishRun
// closes the one, checked, and settles the other at the end of the run).
func runGoTest(o Options) error {
	i := gotest.TestIndex(o.Argv)
	if u := gotest.UserExec(o.Argv[i+1:], os.Getenv("GOFLAGS")); u != "" {
		return cantRun("%s: nettrap runs the test binaries itself through go test -exec; drop your -exec, or use `go test -exec nettrap` on its own", u)
	}
	execArg, err := selfExecFlag()
	if err != nil {
		return cantRun("%v", err)
	}
	if gotest.RunsNothing(o.Argv[i+1:]) {
		// go test -c (or -n) builds and runs no test: no log, no summary.
		return runUnlooked(o.Argv, toTree)
	}
	resolv, err := resolvForInners(o)
	if err != nil {
		return cantRun("%v", err)
	}
	out, err := openSummary(o)
	if err != nil {
		return cantRun("%v", err)
	}
	defer out.close()
	treeDomain(o, out.w) // the inners' Start puts each test binary in one
	engine, err := chooseEngine(o, out.w)
	if err != nil {
		return err
	}
	log, err := prepareAuditLog(o.AuditLog)
	if err != nil {
		return cantRun("%v", err)
	}
	defer log.abort()
	argv := gotest.WithExec(o.Argv, i, execArg)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = o.Names.InnerEnv(os.Environ(), Inner{AuditLog: log.path, RunDir: log.dir, ResolvConf: resolv, RunID: o.RunID, Engine: engine})
	// The go command, the nettraps it starts and their test binaries
	// die with this nettrap, however it dies (see reaper.go).
	rp := startReaper()
	status, err := startAndWait(cmd, rp, toTree(cmd), nil)
	rp.done()
	if err != nil {
		return cannotExec(execStatus(err), "cannot start %s: %v", o.Argv[0], err)
	}
	return exit(finishRun(o, log, out, status))
}

// selfExecFlag is the -exec flag that makes the go command run its test
// binaries through this very nettrap.
func selfExecFlag() (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("cannot find the nettrap executable for go test -exec: %w", err)
	}
	return gotest.ExecFlag(self)
}
