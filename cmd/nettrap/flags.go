package main

import (
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/hub"
	"github.com/nettrap/nettrap/policy"
	"github.com/nettrap/nettrap/supervisor"
)

// config is everything the flags and NETTRAP_* variables say.
type config struct {
	mode             policy.Mode
	rules            []policy.Rule
	allowTests       []*regexp.Regexp
	allowUnspecified bool
	generic          bool
	sealed           bool // --sealed: untrusted code; see policy.Policy.Sealed
	emulate          supervisor.EmulateMode
	errno            unix.Errno
	auditLog         string
	resolvConf       string
	runID            string
	summary          string
	help, version    bool
	args             []string
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

const usage = `nettrap runs a command with outbound network cut off, by a seccomp filter
that hands connect, sendto, sendmsg and sendmmsg to a supervisor.
Loopback, Unix sockets and netlink pass; everything else fails with EPERM
and is reported.

Usage:
  nettrap [flags] [--] COMMAND [ARGS...]
  nettrap [flags] -- go test [go test flags] [packages]
  go test -exec nettrap ./...
  nettrap report [--format=text|json|markdown] AUDIT_LOG...
  nettrap version | --version
  nettrap help | --help

With "go test" as the command, the go command runs unconfined (it may
build and download modules) and every test binary it starts runs under
nettrap with the same flags; one audit log and one summary cover the run.

A test that needs the network says so with t.Attr("nettrap", "network")
(Go 1.25+), or is named by --allow-test; any other attempt fails the test
that made it.

Examples:
  nettrap -- curl http://203.0.113.7/        # blocked: external
  nettrap -- curl https://example.com        # blocked: dns (the name lookup)
  nettrap --allow 10.0.0.0/8:5432 -- ./integration.test
  nettrap --mode=audit --audit-log net.jsonl -- make test
  NETTRAP_ALLOW=192.0.2.0/24 go test -exec nettrap ./...
  gotestsum --raw-command -- nettrap --summary=off -- go test -json ./...

Every flag can also be set with an environment variable: --audit-log is
NETTRAP_AUDIT_LOG, --allow is NETTRAP_ALLOW (comma-separated), and so on.
A flag on the command line wins over the variable.

Exit status: the command's own (128+N when killed by signal N); 1 when a
test passed but nettrap failed it for a network attempt; 125 when nettrap
itself could not run; 126 when the command cannot be executed; 127 when
it is not found.

More: README.md at https://github.com/nettrap/nettrap

Flags:
`

// rawFlags are the flag values before checking.
type rawFlags struct {
	mode, errno, emulate string
	allow, allowTests    []string
}

func newFlagSet(cfg *config, raw *rawFlags) *pflag.FlagSet {
	fs := pflag.NewFlagSet("nettrap", pflag.ContinueOnError)
	// The command's own flags (-test.v …) are not ours: stop at the first
	// argument that is not a flag.
	fs.SetInterspersed(false)
	// Errors are reported once, by run, with a pointer to --help; help
	// itself goes to stdout when asked for.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.SortFlags = false
	fs.StringVar(&raw.mode, "mode", "enforce", "`MODE` is enforce (deny) or audit (allow everything, record what enforce would deny)")
	fs.StringArrayVar(&raw.allow, "allow", nil, "allow destinations in `CIDR[:PORT]` (repeatable; addresses only, never names)")
	fs.BoolVar(&cfg.allowUnspecified, "allow-unspecified", false, "allow 0.0.0.0 and :: (Linux routes them to loopback): dialing a listener's ln.Addr()")
	fs.StringArrayVar(&raw.allowTests, "allow-test", nil, "let tests whose full name matches `REGEX` use the network, as if marked (repeatable)")
	fs.StringVar(&raw.errno, "errno", "EPERM", "errno `NAME` for denied calls (EPERM, EACCES, ECONNREFUSED, ENETUNREACH, …)")
	fs.StringVar(&cfg.auditLog, "audit-log", "", "append one JSON record per audited attempt to `FILE` (kept; without it a run's log is temporary)")
	fs.StringVar(&cfg.summary, "summary", "stderr", "where the run summary goes (`WHERE`: stderr, off, or a file)")
	fs.StringVar(&cfg.resolvConf, "resolv-conf", "/etc/resolv.conf", "`FILE` naming the nameservers whose port 53 is class dns")
	fs.StringVar(&cfg.runID, "run-id", "", "run `ID` for the audit trail (default: a new random one)")
	fs.BoolVar(&cfg.sealed, "sealed", false, "untrusted code: markers and --allow-test count for nothing, only --allow rules open anything")
	fs.StringVar(&raw.emulate, "emulate", "auto", "`MODE` auto, on or off: nettrap makes allowed inet connects and sends itself, with the address it checked (race-free; needs pidfd_getfd)")
	fs.BoolVar(&cfg.generic, "generic", false, "treat a Go test binary as any command: no per-test attribution")
	fs.BoolVar(&cfg.version, "version", false, "print the version and the kernel features found, as nettrap version")
	fs.BoolVarP(&cfg.help, "help", "h", false, "show this help")
	return fs
}

// printUsage writes the help text. The flags are listed with the
// placeholders of their usage strings (CIDR[:PORT], REGEX, FILE…), and
// the variable that sets each.
func printUsage(w io.Writer) {
	fmt.Fprint(w, usage)
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	newFlagSet(&config{}, &rawFlags{}).VisitAll(func(f *pflag.Flag) {
		placeholder, text := pflag.UnquoteUsage(f)
		left := "      --" + f.Name
		if f.Shorthand != "" {
			left = "  -" + f.Shorthand + ", --" + f.Name
		}
		if f.Value.Type() != "bool" {
			left += " " + placeholder
		}
		if f.DefValue != "" && f.Value.Type() != "bool" && f.Value.Type() != "stringArray" {
			text += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		if !noEnv(f.Name) {
			text += "; " + envName(f.Name)
		}
		fmt.Fprintf(tw, "%s\t%s\n", left, text)
	})
	tw.Flush()
}

// parseConfig reads flags from args and NETTRAP_* variables from env.
func parseConfig(args []string, getenv func(string) string) (*config, error) {
	cfg := &config{fromEnv: map[string]string{}}
	var raw rawFlags
	fs := newFlagSet(cfg, &raw)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if cfg.help || cfg.version {
		return cfg, nil
	}
	if err := applyEnv(fs, getenv, cfg.fromEnv); err != nil {
		return nil, err
	}
	cfg.args = fs.Args()
	cfg.raw = raw
	cfg.resolvConfGiven = fs.Changed("resolv-conf")
	if err := cfg.check(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// source names where a flag's value came from: "--mode", or
// "NETTRAP_MODE" when the variable set it.
func (cfg *config) source(flag string) string {
	if v, ok := cfg.fromEnv[flag]; ok {
		return v
	}
	return "--" + flag
}

// check turns the raw values into the config, naming the flag or the
// variable that holds a bad one.
func (cfg *config) check() error {
	raw := &cfg.raw
	var err error
	if cfg.mode, err = policy.ParseMode(raw.mode); err != nil {
		return fmt.Errorf("bad %s %w", cfg.source("mode"), err)
	}
	if cfg.errno, err = parseErrno(raw.errno); err != nil {
		return fmt.Errorf("bad %s %w", cfg.source("errno"), err)
	}
	if cfg.emulate, err = supervisor.ParseEmulateMode(raw.emulate); err != nil {
		return fmt.Errorf("bad %s: %w", cfg.source("emulate"), err)
	}
	if cfg.sealed {
		if cfg.emulate == supervisor.EmulateOff {
			return fmt.Errorf("%s with %s=off: sealed mode needs allowed calls made race-free; drop one", cfg.source("sealed"), cfg.source("emulate"))
		}
		cfg.emulate = supervisor.EmulateOn
	}
	if cfg.sealed && len(raw.allowTests) > 0 {
		return fmt.Errorf("%s with %s %q: under --sealed no test may use the network by name; drop one, or allow addresses with --allow CIDR[:PORT]", cfg.source("sealed"), cfg.source("allow-test"), raw.allowTests[0])
	}
	for _, a := range raw.allowTests {
		re, err := regexp.Compile(a)
		if err != nil {
			return fmt.Errorf("bad %s %q: %w", cfg.source("allow-test"), a, err)
		}
		cfg.allowTests = append(cfg.allowTests, re)
	}
	for _, a := range raw.allow {
		r, err := policy.ParseRule(a)
		if err != nil {
			return fmt.Errorf("bad %s %w", cfg.source("allow"), err)
		}
		cfg.rules = append(cfg.rules, r)
	}
	if cfg.summary == "" {
		return fmt.Errorf("bad %s: empty; want stderr, off or a file", cfg.source("summary"))
	}
	if cfg.resolvConfGiven {
		// The default may be missing (a container without one: no
		// nameservers); a file the user named must be there.
		f, err := os.Open(cfg.resolvConf)
		if err != nil {
			return fmt.Errorf("bad %s: %w", cfg.source("resolv-conf"), err)
		}
		f.Close()
	}
	return nil
}

// envName is the NETTRAP_* variable of a flag: --audit-log is
// NETTRAP_AUDIT_LOG.
func envName(flag string) string {
	return "NETTRAP_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// noEnv are the flags no variable sets.
func noEnv(flag string) bool { return flag == "help" || flag == "version" }

// applyEnv sets every flag not given on the command line from its
// NETTRAP_* variable (--audit-log from NETTRAP_AUDIT_LOG) and records in
// fromEnv which variable set which flag. List flags take comma-separated
// values.
func applyEnv(fs *pflag.FlagSet, getenv func(string) string, fromEnv map[string]string) error {
	var err error
	fs.VisitAll(func(f *pflag.Flag) {
		if err != nil || f.Changed || noEnv(f.Name) {
			return
		}
		name := envName(f.Name)
		v := getenv(name)
		if v == "" {
			return
		}
		fromEnv[f.Name] = name
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
				// pflag's message names the flag; the user wrote the
				// variable. Only the booleans can fail here.
				err = fmt.Errorf("bad %s=%q: want 1, true, 0 or false", name, v)
				return
			}
		}
	})
	return err
}

// innerMark is set for the nettraps an outer one starts (through go test
// -exec or a hub): they see the outer's environment, which it has checked.
const innerMark = "NETTRAP_INNER"

// knownVars are the NETTRAP_* variables nettrap reads: one per flag, and
// the ones it sets itself for the nettraps it starts.
func knownVars() []string {
	known := []string{hub.Env, innerMark}
	newFlagSet(&config{}, &rawFlags{}).VisitAll(func(f *pflag.Flag) {
		if !noEnv(f.Name) {
			known = append(known, envName(f.Name))
		}
	})
	return known
}

// unknownVarWarnings warns about NETTRAP_* variables that nettrap does not
// read: a misspelled one would otherwise be ignored without a word.
func unknownVarWarnings(environ []string) []string {
	known := knownVars()
	var out []string
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(k, "NETTRAP_") || slices.Contains(known, k) {
			continue
		}
		msg := "unknown variable " + k
		if near := nearest(k, known); near != "" {
			msg += " (did you mean " + near + "?)"
		}
		out = append(out, msg)
	}
	return out
}

// nearest is the known name closest to name, if it is a likely typo
// (at most 2 edits, or one is a prefix of the other).
func nearest(name string, known []string) string {
	best, bestD := "", 3
	for _, k := range known {
		d := editDistance(name, k)
		if d < bestD {
			best, bestD = k, d
		}
	}
	if best != "" {
		return best
	}
	for _, k := range known {
		if strings.HasPrefix(k, name) || strings.HasPrefix(name, k) {
			return k
		}
	}
	return ""
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
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
