package run

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/nettrap/nettrap/gotest"
	"github.com/nettrap/nettrap/guard"
	"github.com/nettrap/nettrap/hub"
	"github.com/nettrap/nettrap/landlock"
)

// A command run (`nettrap -- make test`, a script) confines the whole
// tree, and opens a hub: every `go test` in the tree runs its test
// binaries through an inner nettrap, which cannot supervise them itself
// (one notification listener per filter stack) but tells the outer
// nettrap which test is running. The test binaries are wrapped as they
// start (makecache.go), which keeps Go's test cache; with --cache=off
// through -exec, added to GOFLAGS, which caches nothing.

// outer is the hub of a command run: the outer nettrap writes every
// record, the inners' too, to the run's audit log, and ends with a
// summary when go test ran inside.
type outer struct {
	srv *hub.Server // nil until listen
	log *runLog
	out *summaryOut
}

// prepareOuter readies the run's audit log and summary. The hub only
// names the tests of a go test run inside the command: without it (no
// writable temporary directory) the command is confined all the same,
// and prepareOuter returns nil. An audit log asked for must work, though.
func prepareOuter(o Options) (*outer, error) {
	out, err := openSummary(o)
	if err == nil {
		var log *runLog
		if log, err = prepareAuditLog(o.AuditLog); err == nil {
			return &outer{log: log, out: out}, nil
		}
		out.close()
	}
	if o.AuditLog != "" {
		return nil, cantRun("%v", err)
	}
	fmt.Fprintf(os.Stderr, "nettrap: go test inside will not name tests: %v (set TMPDIR to a writable directory)\n", err)
	return nil, nil
}

// listen opens the hub's socket and makes it g's attribution; env is the
// environment of the confined command. On an error the socket is closed
// again, and h and g are as they were.
func (h *outer) listen(o Options, g *guard.Guard) (env []string, err error) {
	resolv, err := resolvForInners(o)
	if err != nil {
		return nil, err
	}
	srv, err := hub.Listen()
	if err != nil {
		return nil, err
	}
	srv.Messages = os.Stderr
	srv.Records = g.WriteRecord
	srv.Sealed = o.Policy.Sealed
	env = o.Names.InnerEnv(os.Environ(), Inner{AuditLog: h.log.path, RunDir: h.log.dir, ResolvConf: resolv, RunID: o.RunID, Hub: srv.Path})
	if env, err = commandEnv(o, srv, env); err != nil {
		srv.Close()
		return nil, err
	}
	h.srv, g.Attribution = srv, srv
	return env, nil
}

// commandEnv is the confined command's environment env, with what makes
// the go commands in it run their test binaries under inner nettraps.
func commandEnv(o Options, srv *hub.Server, env []string) ([]string, error) {
	if o.Kind == GoTest {
		// The go command itself is confined: no -exec, its test
		// binaries are wrapped as they start (gocache.go).
		srv.IsGo = isGo
		srv.GoReachable = landlock.Choose(o.Policy.Sealed).Kind == landlock.None
		return goTestEnv(env, o)
	}
	if wrapsTree(o) {
		// Every go command in the tree is wrapped likewise
		// (makecache.go); they get no toolchain exemption.
		return goTestEnv(env, o)
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(os.Stderr, "nettrap: go test inside will not name tests: cannot find the nettrap executable: %v\n", err)
		return env, nil
	}
	flags, err := gotest.GoflagsWithExec(os.Getenv("GOFLAGS"), self)
	if err != nil {
		fmt.Fprintf(os.Stderr, "nettrap: go test inside will not name tests: %v\n", err)
		return env, nil
	}
	return append(withoutVar(env, "GOFLAGS"), "GOFLAGS="+flags), nil
}

// close closes the hub's socket: no inner can add records after it.
func (h *outer) close() {
	if h != nil && h.srv != nil {
		h.srv.Close()
	}
}

// end closes the hub's socket at the end of the run; from here the end
// settles the run's directory (see runLog).
func (h *outer) end() {
	if h != nil {
		h.close()
		h.log.ended = true
	}
}

// drop gives up the hub's files: the run's directory unless the run's
// end settled it (runLog.abort; a temporary log goes, a log the user
// named stays) and the summary file.
func (h *outer) drop() {
	if h != nil {
		h.log.abort()
		h.out.close()
	}
}

// finish, the hub closed (end), prints the summary when go test ran
// inside; the status stays the command's unless nettrap failed.
func (h *outer) finish(o Options, status int) int {
	if n := h.srv.Lost(); n > 0 && status == 0 {
		fmt.Fprintf(os.Stderr, "nettrap: %d denied attempts could not be put under their test (see above); failing the run\n", n)
		status = 1
	}
	if h.srv.Registered() == 0 {
		// No go test ran inside: the denials are on stderr already, by
		// process; a temporary log goes, a log the user named stays.
		h.log.remove()
		return status
	}
	return finishRun(o, h.log, h.out, status)
}

// resolvForInners is the --resolv-conf to hand down, absolute (the test
// binaries run in their package directories); "" for the default.
func resolvForInners(o Options) (string, error) {
	if !o.ResolvConfGiven {
		return "", nil
	}
	return filepath.Abs(o.ResolvConf)
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
