package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/pflag"
)

const usage = `nettrap runs a command with outbound network cut off, by a seccomp filter
that hands connect, sendto, sendmsg and sendmmsg to a supervisor.
Loopback, Unix sockets and netlink pass; everything else fails with EPERM
and is reported.

Usage:
  nettrap [flags] [--] COMMAND [ARGS...]
  nettrap [flags] -- go test [go test flags] [packages]
  go test -exec nettrap ./...
  nettrap report [--format=text|json|markdown] [--stacks] [--github=auto|on|off] [--exit-zero] AUDIT_LOG...
  nettrap version | --version
  nettrap help | --help

With "go test" as the command, the go command runs confined (its own
calls, such as module downloads, are allowed and audited) and every test
binary it starts runs under nettrap with the same flags, wrapped as it
starts, so Go's test cache keeps working (--cache=off uses go test -exec
instead, which caches nothing); one audit log and one summary cover the
run. Any other command (make test, a script) is confined as a whole, and
the go test runs inside it are wrapped and cached the same way. Under go
test -exec nettrap, each package with findings ends its output with
their summary, naming one audit log for the go command.

A test that needs the network says so with t.Log("nettrap:network") (a
module of any go line) or t.Attr("nettrap", "network") (go 1.25 or
later), or is named by --allow-test; any other attempt fails the test
that made it.

On GitHub Actions (GITHUB_ACTIONS=true) every way of running writes
::error annotations and appends the summary to $GITHUB_STEP_SUMMARY (under
go test -exec, each package's nettrap its own findings). nettrap report
does too (--github=off: not), and exits 1 when its logs hold a blocked
attempt or a bad marker (--exit-zero: 0), so that a job can fail on it.

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

// printUsage writes the help text. The flags are listed with the
// placeholders of their usage strings (CIDR[:PORT], REGEX, FILE…), and
// the variable that sets each.
func printUsage(w io.Writer) {
	fmt.Fprint(w, usage)
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	newFlagSet().VisitAll(func(f *pflag.Flag) {
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
		if env := envName(f.Name); env != "" {
			text += "; " + env
		}
		fmt.Fprintf(tw, "%s\t%s\n", left, text)
	})
	tw.Flush()
}
