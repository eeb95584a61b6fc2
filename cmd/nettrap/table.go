package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"
)

// setting is one of nettrap's settings: its flag, and the variable that
// sets it.
type setting struct {
	name  string // the flag, --name; the key of run.Names
	short string // a one-letter flag too, -short
	env   string // the variable; "" for none
	def   any    // the default: string, bool, or []string for a repeatable flag; nil for a variable without a flag
	usage string // the placeholder in backquotes, as pflag shows it
	// split separates the values of a repeatable flag in its variable:
	// NETTRAP_ALLOW lists addresses, NETTRAP_ALLOW_UNIX socket paths
	// (comma-separated: a path with a comma needs the flag); NETTRAP_ALLOW_TEST holds regular
	// expressions one a line (use | for several on one line), since a
	// regexp may hold commas and spaces but a test name no newline.
	split string
}

// settings is the one table of names: every NETTRAP_* variable nettrap
// reads, and every flag, in the order of the help.
var settings = []setting{
	// Set by nettrap for the nettraps it starts: the socket of the outer
	// nettrap's hub (see package hub), and the outer run's directory
	// (run.Inner.RunDir), which also says that an outer nettrap checked
	// the environment already.
	{name: "hub", env: "NETTRAP_HUB"},
	{name: "inner", env: "NETTRAP_INNER"},
	{name: "mode", env: "NETTRAP_MODE", def: "enforce", usage: "`MODE` is enforce (deny) or audit (allow everything, record what enforce would deny)"},
	{name: "allow", env: "NETTRAP_ALLOW", def: []string(nil), split: ", ", usage: "allow destinations in `CIDR[:PORT]` (repeatable; addresses only, never names)"},
	{name: "allow-unix", env: "NETTRAP_ALLOW_UNIX", def: []string(nil), split: ",", usage: "under --sealed, let calls reach the unix socket bound at `PATH` (or @NAME, abstract) although its listener is outside the confined tree (repeatable)"},
	{name: "allow-unspecified", env: "NETTRAP_ALLOW_UNSPECIFIED", def: false, usage: "allow 0.0.0.0 and :: (Linux routes them to loopback): dialing a listener's ln.Addr(); audited, as --allow ::/128"},
	{name: "allow-test", env: "NETTRAP_ALLOW_TEST", def: []string(nil), split: "\n", usage: "let the tests `RULE` names use the network, as if marked: a regexp on the full test name, or PKG.REGEX for one package (repeatable; refused with --sealed)"},
	{name: "errno", env: "NETTRAP_ERRNO", def: "EPERM", usage: "errno `NAME` for denied calls (EPERM, EACCES, ECONNREFUSED, ENETUNREACH, …)"},
	{name: "audit-log", env: "NETTRAP_AUDIT_LOG", def: "", usage: "append one JSON record per audited attempt to `FILE` (kept; without it a run's log is temporary: the last ten stay)"},
	{name: "summary", env: "NETTRAP_SUMMARY", def: "stderr", usage: "where the run summary goes (`WHERE`: stderr, off, or a file; under go test -exec, each package's, appended)"},
	{name: "resolv-conf", env: "NETTRAP_RESOLV_CONF", def: "/etc/resolv.conf", usage: "`FILE` naming the nameservers whose port 53 is class dns"},
	{name: "run-id", env: "NETTRAP_RUN_ID", def: "", usage: "run `ID` for the audit trail (default: a new random one)"},
	{name: "sealed", env: "NETTRAP_SEALED", def: false, usage: "untrusted code: the tests' markers count for nothing and only --allow rules open anything; with --allow-test (or NETTRAP_ALLOW_TEST) nettrap refuses to run (exit status 125)"},
	{name: "emulate", env: "NETTRAP_EMULATE", def: "auto", usage: "`MODE` auto, on or off: nettrap makes allowed inet connects and sends itself, with the address it checked (race-free; needs pidfd_getfd)"},
	{name: "engine", env: "NETTRAP_ENGINE", def: "auto", usage: "`ENGINE` auto, notify, ptrace or kernel: how nettrap traps the calls; auto uses seccomp user notification, and ptrace where a listener is refused (WSL2 mirrored networking, sysbox, another notification tool) or missing; kernel (root, kernels after 6.12) passes connects and sends to loopback in the kernel with cgroup BPF programs and holds the rest there for nettrap"},
	{name: "userns", env: "NETTRAP_USERNS", def: "auto", usage: "`MODE` auto or off: where nettrap holds CAP_SYS_ADMIN (root), auto starts the command in a user and mount namespace of its own, so root there acts only on namespaces it makes (CAP_SYS_ADMIN dropped where none can be made); off keeps root's capabilities over the starting network namespace (refused with --sealed)"},
	{name: "sealed-netns", env: "NETTRAP_SEALED_NETNS", def: "auto", usage: "`MODE` auto or off: under --sealed, auto runs the command in a network namespace of its own with only lo, where nettrap holds CAP_SYS_ADMIN (root) and the notify engine confines (what --allow opens is reached by nettrap and handed in); off, or where none can be made, checks unix and loopback peers per call"},
	{name: "cache", env: "NETTRAP_CACHE", def: "on", usage: "`MODE` on or off: on, nettrap -- go test (or -- make test) keeps Go's test cache (the go command runs confined, each test binary is wrapped as it starts); off runs the test binaries through go test -exec, uncached"},
	{name: "generic", env: "NETTRAP_GENERIC", def: false, usage: "treat a Go test binary as any command: no per-test attribution"},
	{name: "version", def: false, usage: "print the version and the kernel features found, as nettrap version"},
	{name: "help", short: "h", def: false, usage: "show this help"},
}

// envName is the variable of a setting: --audit-log is NETTRAP_AUDIT_LOG.
func envName(name string) string {
	for _, s := range settings {
		if s.name == name {
			return s.env
		}
	}
	return "" // not a setting: TestSettingNames keeps this from happening
}

// newFlagSet is the flags of the table.
func newFlagSet() *pflag.FlagSet {
	fs := pflag.NewFlagSet("nettrap", pflag.ContinueOnError)
	// The command's own flags (-test.v …) are not ours: stop at the first
	// argument that is not a flag.
	fs.SetInterspersed(false)
	// Errors are reported once, by run, with a pointer to --help; help
	// itself goes to stdout when asked for.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.SortFlags = false
	for _, s := range settings {
		switch def := s.def.(type) {
		case string:
			fs.StringP(s.name, s.short, def, s.usage)
		case bool:
			fs.BoolP(s.name, s.short, def, s.usage)
		case []string:
			fs.StringArrayP(s.name, s.short, def, s.usage)
		}
	}
	return fs
}

// applyEnv sets every flag not given on the command line from its
// variable and records in fromEnv which variable set which flag.
func applyEnv(fs *pflag.FlagSet, getenv func(string) string, fromEnv map[string]string) error {
	for _, s := range settings {
		f := fs.Lookup(s.name)
		if f == nil || f.Changed || s.env == "" {
			continue
		}
		v := getenv(s.env)
		if v == "" {
			continue
		}
		fromEnv[s.name] = s.env
		vals := []string{v}
		if s.split != "" {
			vals = strings.FieldsFunc(v, func(r rune) bool { return strings.ContainsRune(s.split, r) })
		}
		for _, one := range vals {
			if err := fs.Set(s.name, one); err != nil {
				// pflag's message names the flag; the user wrote the
				// variable. Only the booleans can fail here.
				return fmt.Errorf("bad %s=%q: want 1, true, 0 or false", s.env, v)
			}
		}
	}
	return nil
}
