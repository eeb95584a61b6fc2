package run

import (
	"errors"
	"strings"

	"github.com/nettrap/nettrap/supervisor"
	"github.com/nettrap/nettrap/testexec"
)

// `nettrap -- make test` (a command run with its hub) keeps Go's test
// cache as `nettrap -- go test` does (gocache.go), without -exec: the
// filter traps execve, and the test binaries of every go command in the
// tree under no inner nettrap (testexec.IsGoProcess) are wrapped as they
// start. What differs:
//
//   - The go commands are not the run's own child, and the command may
//     change their environment: a `go test` whose GODEBUG lacks
//     nettrapcfg=HASH would print results cached outside nettrap, so its
//     exec is refused (testexec.Decider.Godebug); a test binary whose
//     result may be cached, started by no go command nettrap knows, is
//     refused too (testexec.Decider.Outside).
//   - The go commands get no toolchain exemption (hub.Server.IsGo stays
//     nil): `go run` or `go generate` in a Makefile would otherwise reach
//     the network as the toolchain. Run `go mod download` first.
//
// With --cache=off the run adds -exec to GOFLAGS instead (outer.listen).

// wrapsInTree tells whether the run wraps the test binaries of the go
// commands in its tree: a command run with its hub and the cache on.
func (c *confined) wrapsInTree() bool {
	return wrapsTree(c.o) && c.hub != nil && c.hub.srv != nil
}

// wrapsTree: a command run with the cache on, in every namespace setup
// (root or not, --userns=off). No start waits for a process in the tree:
// nettrap's own start of the command, a vfork whose execve the filter
// traps, holds two Ps (supervisor.schedulerForVfork); a vfork in the tree
// (make's, a shell's, the go command's of its test binaries, an inner
// nettrap's of its real binary) stalls only its own process, while
// nettrap, another process, answers the execve from /proc and the file
// system (testexec.Decider), asking no process of the tree.
func wrapsTree(o Options) bool {
	return o.Kind == Command && o.Cache
}

// execSupervision is the filter and decider of a run that wraps test
// binaries: `nettrap -- go test`, or a command run (wrapsInTree).
func (c *confined) execSupervision() (supervisor.Options, error) {
	if c.o.Kind == GoTest {
		return goTestSupervision(c.g, c.hub.srv.Toolchain)
	}
	so, err := goTestSupervision(c.g, nil)
	if err != nil {
		return so, err
	}
	srv := c.hub.srv
	d := so.Decider.(*testexec.Decider)
	d.IsGo = func(pid int) bool { return srv.Outside(pid) && testexec.IsGoProcess(pid) }
	d.Outside = srv.Outside
	if d.Godebug = godebugSetting(c.cmdEnv); d.Godebug == "" {
		return so, errors.New("the command's GODEBUG has no " + GodebugKey + " setting")
	}
	return so, nil
}

// godebugSetting is the nettrapcfg setting in env's GODEBUG (goTestEnv
// put it there).
func godebugSetting(env []string) string {
	v, _ := testexec.Godebug(env)
	for _, kv := range strings.Split(v, ",") {
		if strings.HasPrefix(kv, GodebugKey+"=") {
			return kv
		}
	}
	return ""
}
