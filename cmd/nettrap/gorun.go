package main

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"

	"github.com/nettrap/nettrap/bpf"
)

// goTestIndex returns the index of "test" in `go [-C dir] test …`, or -1
// when args is not a go test command.
func goTestIndex(args []string) int {
	if len(args) < 2 || filepath.Base(args[0]) != "go" {
		return -1
	}
	i := 1
	// -C is the only flag the go command takes before the subcommand.
	switch {
	case args[i] == "-C" || args[i] == "--C":
		i += 2
	case strings.HasPrefix(args[i], "-C=") || strings.HasPrefix(args[i], "--C="):
		i++
	}
	if i < len(args) && args[i] == "test" {
		return i
	}
	return -1
}

// isExecFlag: arg sets go test's -exec.
func isExecFlag(arg string) bool {
	name, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(arg, "-"), "-"), "=")
	return strings.HasPrefix(arg, "-") && name == "exec"
}

// userExec finds an -exec the user gave (on the command line, up to
// -args, or in GOFLAGS): nettrap must be the -exec program, and the go
// command would silently keep only one of them.
func userExec(testArgs []string, goflags string) string {
	for _, a := range testArgs {
		if a == "-args" || a == "--args" {
			break
		}
		if isExecFlag(a) {
			return a
		}
	}
	for _, f := range strings.Fields(goflags) {
		if isExecFlag(strings.Trim(f, `'"`)) {
			return "GOFLAGS=" + goflags
		}
	}
	return ""
}

// execFlag is the -exec flag naming this nettrap. The go command splits
// the value into words with shell-like quoting, so a path with spaces is
// quoted.
func execFlag(self string) (string, error) {
	if strings.ContainsAny(self, `'"\`) {
		return "", fmt.Errorf("the path of nettrap %q holds a quote or backslash, which go test -exec cannot take", self)
	}
	if strings.ContainsAny(self, " \t\n") {
		self = "'" + self + "'"
	}
	return "-exec=" + self, nil
}

// runGoTest runs `go test` unconfined, with every test binary under this
// nettrap (go test -exec), then prints the run's summary from the shared
// audit log. The status is the go command's own.
func runGoTest(cfg *config, testIdx int) int {
	if !bpf.Detect().UserNotif {
		return cantRun("cannot confine: seccomp user notification unavailable; nettrap needs Linux 5.0+ with seccomp user notification, and a container runtime that allows seccomp(2)")
	}
	if u := userExec(cfg.args[testIdx+1:], os.Getenv("GOFLAGS")); u != "" {
		return cantRun("%s: nettrap runs the test binaries itself through go test -exec; drop your -exec, or use `go test -exec nettrap` on its own", u)
	}
	execArg, err := selfExecFlag()
	if err != nil {
		return cantRun("%v", err)
	}
	if runsNothing(cfg.args[testIdx+1:]) {
		// go test -c (or -n) builds and runs no test: no log, no summary.
		cmd := exec.Command(cfg.args[0], cfg.args[1:]...)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		status, err := runForwardingSignals(cmd, nil, func(sig os.Signal) { signalTree(cmd.Process.Pid, sig.(syscall.Signal)) })
		if err != nil {
			return cannotExec(execStatus(err), "cannot start %s: %v", cfg.args[0], err)
		}
		return status
	}
	if cfg.runID == "" {
		cfg.runID = newRunID()
	}
	resolv, err := resolvForInners(cfg)
	if err != nil {
		return cantRun("%v", err)
	}
	out, err := openSummary(cfg)
	if err != nil {
		return cantRun("%v", err)
	}
	log, err := prepareAuditLog(cfg)
	if err != nil {
		out.close()
		return cantRun("%v", err)
	}
	argv := append(append(append([]string{}, cfg.args[:testIdx+1]...), execArg), cfg.args[testIdx+1:]...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = innerEnv(os.Environ(), cfg, log.path, log.dir, resolv)
	// The go command, the nettraps it starts and their test binaries
	// die with this nettrap, however it dies (see reaper.go).
	rp := startReaper()
	status, err := runForwardingSignals(cmd, rp, func(sig os.Signal) { signalTree(cmd.Process.Pid, sig.(syscall.Signal)) })
	rp.done()
	if err != nil {
		out.close()
		log.remove()
		return cannotExec(execStatus(err), "cannot start %s: %v", cfg.args[0], err)
	}
	return finishRun(cfg, log, out, status)
}

// resolvForInners is the --resolv-conf to hand down, absolute (the test
// binaries run in their package directories); "" for the default.
func resolvForInners(cfg *config) (string, error) {
	if !cfg.resolvConfGiven {
		return "", nil
	}
	return filepath.Abs(cfg.resolvConf)
}

// innerEnv is the environment of the go command and, through it, of every
// nettrap it starts with -exec: the run's flags as NETTRAP_* variables.
//
// runDir, the run's private directory, is the value of innerMark, for the
// inners to mark that they ran a test binary ("" for none).
func innerEnv(env []string, cfg *config, logPath, runDir, resolv string) []string {
	set := map[string]string{
		envName("mode"):        cfg.raw.mode,
		envName("errno"):       cfg.raw.errno,
		envName("allow"):       strings.Join(cfg.raw.allow, ","),
		envName("allow-test"):  strings.Join(cfg.raw.allowTests, "\n"),
		envName("audit-log"):   logPath,
		envName("resolv-conf"): resolv,
		envName("run-id"):      cfg.runID,
		envName("sealed"):      sealedEnv(cfg.sealed),
		envName("emulate"):     cfg.raw.emulate,
		innerMark:              cmp.Or(runDir, "1"),
	}
	if cfg.allowUnspecified {
		set[envName("allow-unspecified")] = "1"
	}
	out := make([]string, 0, len(env)+len(set))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if _, ours := set[k]; ours {
			continue
		}
		// The inners take these from the outer's config or not at all:
		// the summary is the outer's; generic is what the outer decided.
		switch k {
		case envName("generic"), envName("allow-unspecified"), envName("summary"), envName("resolv-conf"):
			continue
		}
		out = append(out, kv)
	}
	for k, v := range set {
		if v != "" {
			out = append(out, k+"="+v)
		}
	}
	return out
}

// sealedEnv is NETTRAP_SEALED for the inner nettraps: set or absent, never
// inherited from elsewhere.
func sealedEnv(sealed bool) string {
	if sealed {
		return "1"
	}
	return ""
}

// runForwardingSignals starts cmd, hands the signals nettrap gets to
// forward (to the command, or to its whole tree: the go command does not
// stop running test binaries on SIGINT, it only stops starting new ones;
// it sends SIGQUIT to the -exec program on -timeout) and waits. The error
// is only for a command that could not start. The command joins rp's
// process group when there is one, and dies with nettrap.
func runForwardingSignals(cmd *exec.Cmd, rp *reaper, forward func(os.Signal)) (int, error) {
	sigs, stop := catchSignals()
	defer stop()
	rp.join(cmd)
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	// PR_SET_PDEATHSIG fires when the forking thread exits, not the
	// process: hold this thread until the command is reaped.
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case sig := <-sigs:
				forward(sig)
			case <-done:
				return
			}
		}
	}()
	err := cmd.Wait()
	if errors.Is(err, exec.ErrWaitDelay) {
		err = nil
	}
	return exitStatus(cmd, err), nil
}

// catchSignals starts catching the signals nettrap passes on to its
// command; it is called before the command starts, so that none is lost.
// stop ends the catching.
func catchSignals() (sigs chan os.Signal, stop func()) {
	sigs = make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT, syscall.SIGHUP, syscall.SIGUSR1, syscall.SIGUSR2)
	return sigs, func() { signal.Stop(sigs) }
}

// selfExecFlag is the -exec flag that makes the go command run its test
// binaries through this very nettrap.
func selfExecFlag() (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("cannot find the nettrap executable for go test -exec: %w", err)
	}
	return execFlag(self)
}
