package main

import (
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/policy"
)

// config is everything the flags and NETTRAP_* variables say.
type config struct {
	mode       policy.Mode
	rules      []policy.Rule
	allowTests []*regexp.Regexp
	generic    bool
	sealed     bool // --sealed: untrusted code; see policy.Policy.Sealed
	errno      unix.Errno
	auditLog   string
	resolvConf string
	runID      string
	help       bool
	args       []string
	// raw keeps the flag values as given, so that `nettrap -- go test`
	// can hand them to the nettrap of every test binary (NETTRAP_*).
	raw rawFlags
}

const usage = `nettrap runs a command with outbound network cut off, by a seccomp filter
that hands connect, sendto, sendmsg and sendmmsg to a supervisor.
Loopback, Unix sockets and netlink pass; everything else fails with EPERM
and is reported.

Usage:
  nettrap [flags] [--] COMMAND [ARGS...]
  nettrap [flags] -- go test [go test flags] [packages]
  go test -exec nettrap ./...
  nettrap report [--format=text|json|markdown] AUDIT_LOG...
  nettrap version

With "go test" as the command, the go command runs unconfined (it may
build and download modules) and every test binary it starts runs under
nettrap with the same flags; one audit log and one summary cover the run.

Examples:
  nettrap -- curl https://example.com        # blocked: external
  nettrap --allow 10.0.0.0/8:5432 -- ./integration.test
  nettrap --mode=audit --audit-log net.jsonl -- make test
  NETTRAP_ALLOW=192.0.2.0/24 go test -exec nettrap ./...

Every flag can also be set with an environment variable: --audit-log is
NETTRAP_AUDIT_LOG, --allow is NETTRAP_ALLOW (comma-separated), and so on.
A flag on the command line wins over the variable.

Flags:
`

// rawFlags are the flag values before checking.
type rawFlags struct {
	mode, errno       string
	allow, allowTests []string
}

func newFlagSet(cfg *config, raw *rawFlags) *pflag.FlagSet {
	fs := pflag.NewFlagSet("nettrap", pflag.ContinueOnError)
	// The command's own flags (-test.v …) are not ours: stop at the first
	// argument that is not a flag.
	fs.SetInterspersed(false)
	fs.StringVar(&raw.mode, "mode", "enforce", "enforce: deny; audit: allow everything, record what would be denied")
	fs.StringArrayVar(&raw.allow, "allow", nil, "allow CIDR[:PORT] (repeatable; addresses only, never names)")
	fs.StringArrayVar(&raw.allowTests, "allow-test", nil, "let tests whose full name matches `REGEX` use the network, as if marked (repeatable)")
	fs.BoolVar(&cfg.sealed, "sealed", false, "untrusted code: markers and --allow-test count for nothing, only --allow rules open anything")
	fs.BoolVar(&cfg.generic, "generic", false, "treat a Go test binary as any command: no per-test attribution")
	fs.StringVar(&raw.errno, "errno", "EPERM", "errno for denied calls (EPERM, EACCES, ECONNREFUSED, ENETUNREACH, …)")
	fs.StringVar(&cfg.auditLog, "audit-log", "", "append one JSON record per audited attempt to `FILE`")
	fs.StringVar(&cfg.resolvConf, "resolv-conf", "/etc/resolv.conf", "where to read the nameservers whose port 53 is classed dns")
	fs.StringVar(&cfg.runID, "run-id", "", "run id for the audit trail (default: a new random one)")
	fs.BoolVarP(&cfg.help, "help", "h", false, "show this help")
	fs.Usage = func() {
		fmt.Fprint(os.Stderr, usage)
		fs.PrintDefaults()
	}
	return fs
}

// parseConfig reads flags from args and NETTRAP_* variables from env.
func parseConfig(args []string, getenv func(string) string) (*config, error) {
	cfg := &config{}
	var raw rawFlags
	fs := newFlagSet(cfg, &raw)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if err := applyEnv(fs, getenv); err != nil {
		return nil, err
	}
	cfg.args = fs.Args()
	cfg.raw = raw
	if cfg.help {
		return cfg, nil
	}
	var err error
	if cfg.mode, err = policy.ParseMode(raw.mode); err != nil {
		return nil, err
	}
	if cfg.errno, err = parseErrno(raw.errno); err != nil {
		return nil, err
	}
	if cfg.sealed && len(raw.allowTests) > 0 {
		return nil, fmt.Errorf("--sealed with --allow-test %q (or NETTRAP_ALLOW_TEST): under --sealed no test may use the network by name; drop one, or allow addresses with --allow CIDR[:PORT]", raw.allowTests[0])
	}
	for _, a := range raw.allowTests {
		re, err := regexp.Compile(a)
		if err != nil {
			return nil, fmt.Errorf("bad --allow-test %q: %w", a, err)
		}
		cfg.allowTests = append(cfg.allowTests, re)
	}
	for _, a := range raw.allow {
		r, err := policy.ParseRule(a)
		if err != nil {
			return nil, err
		}
		cfg.rules = append(cfg.rules, r)
	}
	return cfg, nil
}

// applyEnv sets every flag not given on the command line from its
// NETTRAP_* variable (--audit-log from NETTRAP_AUDIT_LOG). List flags take
// comma-separated values.
func applyEnv(fs *pflag.FlagSet, getenv func(string) string) error {
	var err error
	fs.VisitAll(func(f *pflag.Flag) {
		if err != nil || f.Changed || f.Name == "help" {
			return
		}
		name := "NETTRAP_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		v := getenv(name)
		if v == "" {
			return
		}
		vals := []string{v}
		// NETTRAP_ALLOW lists addresses; NETTRAP_ALLOW_TEST holds regular
		// expressions one a line (use | for several on one line), since a
		// regexp may hold commas and spaces but a test name no newline.
		switch f.Name {
		case "allow":
			vals = strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' })
		case "allow-test":
			vals = strings.FieldsFunc(v, func(r rune) bool { return r == '\n' })
		}
		for _, one := range vals {
			if e := fs.Set(f.Name, one); e != nil {
				err = fmt.Errorf("bad %s=%q: %w", name, v, e)
				return
			}
		}
	})
	return err
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
	return 0, fmt.Errorf("bad --errno %q: not an errno name (e.g. EPERM, EACCES, ECONNREFUSED)", s)
}
