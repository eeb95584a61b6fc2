package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/nettrap/nettrap/audit"
	"github.com/nettrap/nettrap/gotest"
	"github.com/nettrap/nettrap/guard"
	"github.com/nettrap/nettrap/hub"
)

// A generic run (`nettrap -- make test`, a script) confines the whole
// tree, and opens a hub: every `go test` in the tree runs its test
// binaries through an inner nettrap (-exec, added through GOFLAGS), which
// cannot supervise them itself (one notification listener per filter
// stack) but tells the outer nettrap which test is running.

// outerHub is the hub of a generic run.
type outerHub struct {
	srv *hub.Server
	log runLog      // the run's audit log
	out *summaryOut // where the summary goes
}

// prepareHub readies the audit log of a generic run: the outer nettrap
// writes every record, the inners' too, and ends with a summary when go
// test ran inside.
func prepareHub(cfg *config) (*outerHub, error) {
	if cfg.runID == "" {
		cfg.runID = newRunID()
	}
	out, err := openSummary(cfg)
	if err != nil {
		return nil, err
	}
	h := &outerHub{out: out}
	if h.log, err = prepareAuditLog(cfg); err != nil {
		out.close()
		return nil, err
	}
	cfg.auditLog = h.log.path
	return h, nil
}

// listen opens the hub's socket and makes it g's attribution; env is the
// environment of the confined command.
func (h *outerHub) listen(cfg *config, g *guard.Guard) (env []string, err error) {
	resolv, err := resolvForInners(cfg)
	if err != nil {
		return nil, err
	}
	if h.srv, err = hub.Listen(); err != nil {
		return nil, err
	}
	h.srv.Messages = os.Stderr
	h.srv.Records = g.WriteRecord
	h.srv.Sealed = cfg.sealed
	g.Attribution = h.srv
	env = append(innerEnv(os.Environ(), cfg, h.log.path, h.log.dir, resolv), hub.Env+"="+h.srv.Path)
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(os.Stderr, "nettrap: go test inside will not name tests: cannot find the nettrap executable: %v\n", err)
		return env, nil
	}
	flags, err := goflagsWithExec(os.Getenv("GOFLAGS"), self)
	if err != nil {
		fmt.Fprintf(os.Stderr, "nettrap: go test inside will not name tests: %v\n", err)
		return env, nil
	}
	return append(withoutVar(env, "GOFLAGS"), "GOFLAGS="+flags), nil
}

// finish closes the hub and, when go test ran inside, prints the
// summary; the status stays the command's unless nettrap failed.
func (h *outerHub) finish(cfg *config, status int) int {
	if h.srv == nil {
		h.log.remove()
		if h.out != nil {
			h.out.close()
		}
		return status
	}
	h.srv.Close()
	if n := h.srv.Lost(); n > 0 && status == 0 {
		fmt.Fprintf(os.Stderr, "nettrap: %d denied attempts could not be put under their test (see above); failing the run\n", n)
		status = 1
	}
	if h.srv.Registered() == 0 {
		// No go test ran inside: the denials are on stderr already, by
		// process; a temporary log goes, a log the user named stays.
		h.log.remove()
		h.out.close()
		return status
	}
	return finishRun(cfg, h.log, h.out, status)
}

// goflagsWithExec adds -exec=self to the user's GOFLAGS, unless they name
// an -exec of their own (which then wins: its test binaries are confined
// all the same, attributed by process).
func goflagsWithExec(goflags, self string) (string, error) {
	if userExec(nil, goflags) != "" {
		return goflags, nil
	}
	// GOFLAGS is split at spaces, with no quoting.
	if strings.ContainsAny(self, " \t\n'\"\\") {
		return "", fmt.Errorf("the path of nettrap %q holds a space or quote, which GOFLAGS cannot carry", self)
	}
	return strings.TrimSpace(goflags + " -exec=" + self), nil
}

func withoutVar(env []string, name string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); k != name {
			out = append(out, kv)
		}
	}
	return out
}

// runInner is nettrap started inside a generic run (hub.Env set): it is
// confined already, so it installs no filter. A test binary is run with
// attribution served to the outer nettrap; `go test` gets -exec; anything
// else just runs.
func runInner(cfg *config, path string) int {
	if !hub.Confined() {
		return cantRun("%s is set but this process is not under a seccomp filter: it comes from `nettrap -- COMMAND`, and only means something inside one; unset %s", hub.Env, hub.Env)
	}
	if i := goTestIndex(cfg.args); i > 0 && !cfg.generic {
		argv := cfg.args
		if userExec(argv[i+1:], os.Getenv("GOFLAGS")) == "" {
			execArg, err := selfExecFlag()
			if err != nil {
				return cantRun("%v", err)
			}
			argv = append(append(append([]string{}, argv[:i+1]...), execArg), argv[i+1:]...)
		}
		return runPlain(argv)
	}
	if pkg, ok := gotest.TestPackage(cfg.args); ok && !cfg.generic {
		return runInnerTestBinary(cfg, path, pkg)
	}
	return runPlain(cfg.args)
}

// runInnerTestBinary runs a test binary unsupervised (the outer's filter
// confines it), reads its output with the tracker, and answers the outer
// nettrap's questions from it.
func runInnerTestBinary(cfg *config, path, pkg string) int {
	tb, argv, err := newTestBinary(cfg, pkg)
	if err != nil {
		return cantRun("%v", err)
	}
	markRan()
	cl, err := hub.Dial(path, tb.tracker.Package, filepath.Base(cfg.args[0]), 0)
	if err != nil {
		tb.w.Close()
		return cantRun("%v (%s=%s)", err, hub.Env, path)
	}
	defer cl.Close()
	cl.Serve(tb.tracker)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, tb.w, tb.w
	status, err := runForwardingSignals(cmd, nil, func(sig os.Signal) { cmd.Process.Signal(sig) })
	tb.w.Close()
	if err != nil {
		return cantRun("cannot start %s: %v", cfg.args[0], err)
	}
	return tb.finish(status, func(rec audit.Record) {
		if err := cl.Record(rec); err != nil {
			fmt.Fprintf(os.Stderr, "nettrap: %v; the record was: %+v\n", err, rec)
		}
	})
}

// runPlain runs argv as it is, passing nettrap's signals on.
func runPlain(argv []string) int {
	if code, err := lookCommand(argv[0]); err != nil {
		return cannotExec(code, "%v", err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	status, err := runForwardingSignals(cmd, nil, func(sig os.Signal) { cmd.Process.Signal(sig) })
	if err != nil {
		return cannotExec(execStatus(err), "cannot start %s: %v", argv[0], err)
	}
	return status
}
