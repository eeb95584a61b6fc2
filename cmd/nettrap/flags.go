package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/nettrap/nettrap/gotest"

	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/policy"
	"github.com/nettrap/nettrap/supervisor"
)

// config is everything the flags and NETTRAP_* variables say.
type config struct {
	mode             policy.Mode
	rules            []policy.Rule
	allowTests       []gotest.TestRule
	allowUnix        []string // --allow-unix, checked (policy.ParseAllowUnix)
	allowUnspecified bool
	generic          bool
	cache            bool // --cache: go test keeps its test cache
	sealed           bool // --sealed: untrusted code; see policy.Policy.Sealed
	emulate          supervisor.EmulateMode
	engine           supervisor.EngineMode
	userns           supervisor.UsernsMode
	sealedNetns      bool // --sealed-netns=auto
	errno            unix.Errno
	auditLog         string
	resolvConf       string
	runID            string
	summary          string
	help, version    bool
	args             []string
	// hub and outerRun are set by an outer nettrap (see settings).
	hub, outerRun string
	// raw keeps the flag values as given, so that `nettrap -- go test`
	// can hand them to the nettrap of every test binary (NETTRAP_*).
	raw rawFlags
	// fromEnv maps a flag set by a variable to that variable, so that
	// an error names what the user actually wrote.
	fromEnv map[string]string
	// resolvConfGiven: --resolv-conf was given (flag or variable), so a
	// missing file is an error, not "no nameservers".
	resolvConfGiven bool
}

// rawFlags are the flag values before checking.
type rawFlags struct {
	mode, errno, emulate, engine, cache, userns, sealedNetns string
	allow, allowTests, allowUnix                             []string
}

// parseConfig reads flags from args and NETTRAP_* variables from env.
func parseConfig(args []string, getenv func(string) string) (*config, error) {
	fs := newFlagSet()
	if err := fs.Parse(args); err != nil {
		return nil, suggestFlag(fs, err)
	}
	cfg := &config{fromEnv: map[string]string{}}
	cfg.help, _ = fs.GetBool("help")
	cfg.version, _ = fs.GetBool("version")
	if cfg.help {
		return cfg, nil
	}
	if cfg.version {
		// The version names the engine and user namespace a run
		// would use: only --engine and --userns (or their variables)
		// count; the rest is not checked.
		err := cfg.readEngine(fs, getenv)
		return cfg, err
	}
	if err := applyEnv(fs, getenv, cfg.fromEnv); err != nil {
		return nil, err
	}
	cfg.read(fs)
	cfg.args = fs.Args()
	cfg.hub, cfg.outerRun = getenv(envName("hub")), getenv(envName("inner"))
	if err := cfg.check(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// suggestFlag adds to pflag's error for an unknown flag the flag it
// likely meant, as unknownVarWarnings does for a variable: "unknown
// flag: --alow (did you mean --allow?)". A long flag written with one
// dash (-allow, -alow) is pflag's unknown shorthand; it gets the long
// flag too.
func suggestFlag(fs *pflag.FlagSet, err error) error {
	var ne *pflag.NotExistError
	if !errors.As(err, &ne) {
		return err
	}
	name := ne.GetSpecifiedName()
	if short := ne.GetSpecifiedShortnames(); short != "" {
		name, _, _ = strings.Cut(short, "=")
		if len(name) < 2 {
			return err
		}
	}
	var known []string
	fs.VisitAll(func(f *pflag.Flag) { known = append(known, f.Name) })
	if slices.Contains(known, name) {
		return fmt.Errorf("%w (did you mean --%s?)", err, name)
	}
	if near := nearest(name, known); near != "" {
		return fmt.Errorf("%w (did you mean --%s?)", err, near)
	}
	return err
}

// read takes the values of the flags, given or defaults.
func (cfg *config) read(fs *pflag.FlagSet) {
	str := func(name string) string { v, _ := fs.GetString(name); return v }
	list := func(name string) []string { v, _ := fs.GetStringArray(name); return v }
	flag := func(name string) bool { v, _ := fs.GetBool(name); return v }
	cfg.raw = rawFlags{mode: str("mode"), errno: str("errno"), emulate: str("emulate"), engine: str("engine"), cache: str("cache"), userns: str("userns"), sealedNetns: str("sealed-netns"),
		allow: list("allow"), allowTests: list("allow-test"), allowUnix: list("allow-unix")}
	cfg.allowUnspecified, cfg.sealed, cfg.generic = flag("allow-unspecified"), flag("sealed"), flag("generic")
	cfg.auditLog, cfg.summary, cfg.runID = str("audit-log"), str("summary"), str("run-id")
	cfg.resolvConf, cfg.resolvConfGiven = str("resolv-conf"), fs.Changed("resolv-conf")
}

// Source names where a setting's value came from: "--mode", or
// "NETTRAP_MODE" when the variable set it (run.Names).
func (cfg *config) Source(name string) string {
	if v, ok := cfg.fromEnv[name]; ok {
		return v
	}
	return "--" + name
}

// Var is the variable of a setting (run.Names).
func (cfg *config) Var(name string) string { return envName(name) }

// check turns the raw values into the config, naming the flag or the
// variable that holds a bad one.
func (cfg *config) check() error {
	raw := &cfg.raw
	var err error
	if cfg.mode, err = policy.ParseMode(raw.mode); err != nil {
		return fmt.Errorf("bad %s %w", cfg.Source("mode"), err)
	}
	if cfg.errno, err = parseErrno(raw.errno); err != nil {
		return fmt.Errorf("bad %s %w", cfg.Source("errno"), err)
	}
	if cfg.emulate, err = supervisor.ParseEmulateMode(raw.emulate); err != nil {
		return fmt.Errorf("bad %s: %w", cfg.Source("emulate"), err)
	}
	if err := cfg.parseEngine(); err != nil {
		return err
	}
	if cfg.userns, err = supervisor.ParseUsernsMode(raw.userns); err != nil {
		return fmt.Errorf("bad %s %w", cfg.Source("userns"), err)
	}
	switch strings.ToLower(raw.sealedNetns) {
	case "auto", "on":
		cfg.sealedNetns = true
	case "off":
	default:
		return fmt.Errorf("bad %s %q: want auto or off", cfg.Source("sealed-netns"), raw.sealedNetns)
	}
	switch strings.ToLower(raw.cache) {
	case "on", "1", "true":
		cfg.cache = true
	case "off", "0", "false":
	default:
		return fmt.Errorf("bad %s %q: want on or off", cfg.Source("cache"), raw.cache)
	}
	if err := cfg.checkSealed(); err != nil {
		return err
	}
	for _, a := range raw.allowTests {
		r, err := gotest.ParseTestRule(a)
		if err != nil {
			return fmt.Errorf("bad %s %w", cfg.Source("allow-test"), err)
		}
		cfg.allowTests = append(cfg.allowTests, r)
	}
	for _, a := range raw.allow {
		r, err := policy.ParseRule(a)
		if err != nil {
			return fmt.Errorf("bad %s %w", cfg.Source("allow"), err)
		}
		cfg.rules = append(cfg.rules, r)
	}
	for _, a := range raw.allowUnix {
		name, err := policy.ParseAllowUnix(a)
		if err != nil {
			return fmt.Errorf("bad %s %w", cfg.Source("allow-unix"), err)
		}
		cfg.allowUnix = append(cfg.allowUnix, name)
	}
	if cfg.summary == "" {
		return fmt.Errorf("bad %s: empty; want stderr, off or a file", cfg.Source("summary"))
	}
	if cfg.resolvConfGiven {
		// The default may be missing (a container without one: no
		// nameservers); a file the user named must be there.
		f, err := os.Open(cfg.resolvConf)
		if err != nil {
			return fmt.Errorf("bad %s: %w", cfg.Source("resolv-conf"), err)
		}
		f.Close()
	}
	return nil
}

// checkSealed: --sealed needs emulation and the notify engine's checks,
// and opens nothing by name; the kernel engine needs the command's own
// user namespace.
func (cfg *config) checkSealed() error {
	if cfg.engine == supervisor.EngineKernelOnly && cfg.userns == supervisor.UsernsOff {
		return fmt.Errorf("%s=kernel with %s=off: the command would keep CAP_NET_ADMIN over the kernel engine's programs; drop one", cfg.Source("engine"), cfg.Source("userns"))
	}
	if !cfg.sealed {
		return nil
	}
	if cfg.engine == supervisor.EngineKernelOnly {
		return fmt.Errorf("%s with %s=kernel: sealed mode checks each allowed call's peer, which the notify engine does (auto); drop one", cfg.Source("sealed"), cfg.Source("engine"))
	}
	if cfg.emulate == supervisor.EmulateOff {
		return fmt.Errorf("%s with %s=off: sealed mode needs allowed calls made race-free; drop one", cfg.Source("sealed"), cfg.Source("emulate"))
	}
	cfg.emulate = supervisor.EmulateOn
	if cfg.userns == supervisor.UsernsOff {
		return fmt.Errorf("%s with %s=off: under --sealed root in a namespace the command makes must not act on the starting one; drop one", cfg.Source("sealed"), cfg.Source("userns"))
	}
	if len(cfg.raw.allowTests) > 0 {
		return fmt.Errorf("%s with %s %q: under --sealed no test may use the network by name; drop one, or allow addresses with --allow CIDR[:PORT]", cfg.Source("sealed"), cfg.Source("allow-test"), cfg.raw.allowTests[0])
	}
	return nil
}

// readEngine reads --engine and --userns alone, from the flags or their
// variables.
func (cfg *config) readEngine(fs *pflag.FlagSet, getenv func(string) string) error {
	cfg.raw.engine, _ = fs.GetString("engine")
	if v := getenv(envName("engine")); !fs.Changed("engine") && v != "" {
		cfg.raw.engine, cfg.fromEnv["engine"] = v, envName("engine")
	}
	cfg.raw.userns, _ = fs.GetString("userns")
	if v := getenv(envName("userns")); !fs.Changed("userns") && v != "" {
		cfg.raw.userns, cfg.fromEnv["userns"] = v, envName("userns")
	}
	var err error
	if cfg.userns, err = supervisor.ParseUsernsMode(cfg.raw.userns); err != nil {
		return fmt.Errorf("bad %s %w", cfg.Source("userns"), err)
	}
	return cfg.parseEngine()
}

// parseEngine checks the raw --engine.
func (cfg *config) parseEngine() error {
	var err error
	if cfg.engine, err = supervisor.ParseEngineMode(cfg.raw.engine); err != nil {
		return fmt.Errorf("bad %s %q: want auto, notify, ptrace or kernel", cfg.Source("engine"), cfg.raw.engine)
	}
	return nil
}

func parseErrno(s string) (unix.Errno, error) {
	name := strings.ToUpper(strings.TrimSpace(s))
	if !strings.HasPrefix(name, "E") {
		name = "E" + name
	}
	for e := unix.Errno(1); e < 4096; e++ {
		if unix.ErrnoName(e) == name {
			return e, nil
		}
	}
	return 0, fmt.Errorf("%q: not an errno name (e.g. EPERM, EACCES, ECONNREFUSED)", s)
}
