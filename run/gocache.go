package run

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"

	"github.com/nettrap/nettrap/bpf"
	"github.com/nettrap/nettrap/decision"
	"github.com/nettrap/nettrap/gotest"
	"github.com/nettrap/nettrap/procfs"
	"github.com/nettrap/nettrap/supervisor"
	"github.com/nettrap/nettrap/testexec"
)

// `nettrap -- go test` keeps Go's test cache (docs/test-cache.md): the go command
// runs confined as a whole, like a command run with a hub, but without
// -exec (which turns the cache off). The filter also traps execve, and
// each test binary the go command starts is wrapped by an inner nettrap
// as it starts (package testexec). The go command's own calls (module
// downloads) are the toolchain's (hub.Server.IsGo).
//
// The cache key: the go command hashes its GODEBUG into every cached
// test result, so the run appends nettrapcfg=HASH to it, HASH covering
// everything a verdict depends on (cacheConfig). A bare run's results,
// and those of another configuration, are then never taken for this
// one's. A pass with an attempt in it is never stored (testexec.Uncache,
// and a denial fails the binary).

// GodebugKey is the GODEBUG setting that names nettrap's configuration.
// The runtime ignores settings it does not know, without a word.
const GodebugKey = "nettrapcfg"

// runGoTestCached runs go test confined, with its test cache.
func runGoTestCached(o Options) error {
	i := gotest.TestIndex(o.Argv)
	if u := gotest.UserExec(o.Argv[i+1:], os.Getenv("GOFLAGS")); u != "" {
		return cantRun("%s: nettrap runs the test binaries itself; drop your -exec, or use `go test -exec nettrap` on its own", u)
	}
	if gotest.RunsNothing(o.Argv[i+1:]) {
		// go test -c (or -n) builds and runs no test: no log, no summary.
		return runUnlooked(o.Argv, toTree)
	}
	// The cache key needs it soon; reading the executable overlaps with
	// the rest of the setup.
	go selfHash()
	return runConfined(o)
}

// goTestEnv is env with GODEBUG extended by the configuration's hash.
func goTestEnv(env []string, o Options) ([]string, error) {
	h, err := cacheConfig(o)
	if err != nil {
		return nil, err
	}
	return append(withoutVar(env, "GODEBUG"), "GODEBUG="+withGodebug(os.Getenv("GODEBUG"), h)), nil
}

// withGodebug is the GODEBUG value v with GodebugKey=hash, in place of
// any such setting already there.
func withGodebug(v, hash string) string {
	var out []string
	for _, kv := range strings.Split(v, ",") {
		if k, _, _ := strings.Cut(strings.TrimSpace(kv), "="); kv != "" && k != GodebugKey {
			out = append(out, kv)
		}
	}
	return strings.Join(append(out, GodebugKey+"="+hash), ",")
}

var selfHash = sync.OnceValues(func() (string, error) {
	f, err := os.Open(procfs.SelfPath("exe"))
	if err != nil {
		return "", fmt.Errorf("hash the nettrap executable: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hash the nettrap executable: %w", err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
})

// cacheConfig hashes what a verdict depends on: nettrap itself, the
// policy (mode, rules, errno, sealed, unspecified), --allow-test,
// --emulate, --userns (root's tests see other capabilities) and the
// nameservers (their port 53 is class dns).
func cacheConfig(o Options) (string, error) {
	self, err := selfHash()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	p := o.Policy
	fmt.Fprintf(h, "nettrap %s\nmode %v\nerrno %d\nsealed %t\nunspecified %t\nemulate %d\n",
		self, p.Mode, p.Errno, p.Sealed, p.AllowUnspecified, o.Emulate)
	fmt.Fprintf(h, "userns %d\nsealed-netns %t\n", o.Userns, o.SealedNetns)
	for _, r := range p.Rules {
		fmt.Fprintf(h, "allow %s\n", r.String())
	}
	for _, name := range p.AllowUnix {
		fmt.Fprintf(h, "allow-unix %q\n", name)
	}
	for _, r := range o.AllowTests {
		fmt.Fprintf(h, "allow-test %q\n", r.Raw)
	}
	resolv, err := os.ReadFile(o.ResolvConf)
	fmt.Fprintf(h, "resolv-conf %q %x %v\n", o.ResolvConf, sha256.Sum256(resolv), err != nil)
	return hex.EncodeToString(h.Sum(nil))[:32], nil
}

// isGo tells whether pid is the go command: the confined command is
// this nettrap's only confined child.
func isGo(pid int) bool { return procfs.ParentPID(pid) == os.Getpid() }

// goTestSupervision is the filter and decider of a cached go test run:
// exec calls wrap test binaries, every other call goes to d; toolchain
// tells whose calls would count as the go command's own.
func goTestSupervision(d decision.Decider, toolchain func(pid int) bool) (supervisor.Options, error) {
	prog, err := bpf.AssembleWith(runtime.GOARCH, bpf.Options{Exec: true})
	if err != nil {
		return supervisor.Options{}, err
	}
	self, err := os.Executable()
	if err != nil {
		return supervisor.Options{}, fmt.Errorf("find the nettrap executable: %w", err)
	}
	return supervisor.Options{Program: prog, TrapsExec: true,
		Decider: &testexec.Decider{Next: d, Self: self, IsGo: isGo, Toolchain: toolchain, Messages: os.Stderr}}, nil
}
