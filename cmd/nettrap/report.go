package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"

	"github.com/nettrap/nettrap/report"
)

const reportUsage = `Usage: nettrap report [--format=text|json|markdown] [--run-id ID] [--stacks] AUDIT_LOG...

Prints the summary of one or more audit logs (e.g. merged from CI shards):
per package and test, what was blocked, what marked tests were allowed,
stale markers and attempts at collection time, then the totals; with
--stacks, the whole stack of each blocked attempt's row.
Exit status: 0, or 125 when a log cannot be read or is damaged.

Flags:
`

// runReport is `nettrap report`.
func runReport(args []string) error {
	fs := pflag.NewFlagSet("nettrap report", pflag.ContinueOnError)
	format := fs.String("format", "text", "`FORMAT` of the summary: text, json or markdown")
	runID := fs.String("run-id", "", "only the records of run `ID`")
	stacks := fs.Bool("stacks", false, "with --format=text, print after the summary the whole stack of each row of blocked attempts (its first attempt's; the test output shows only the module's frames); json has them always")
	// Help asked for goes to stdout; an error is one line on stderr.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			fmt.Fprint(os.Stdout, reportUsage)
			fs.SetOutput(os.Stdout)
			fs.PrintDefaults()
			return nil
		}
		return cantRun("report: %v (see nettrap report --help)", suggestFlag(fs, err))
	}
	if fs.NArg() == 0 {
		return cantRun("report: no audit log given: nettrap report [--format=text|json|markdown] AUDIT_LOG...")
	}
	recs, err := report.ReadFiles(fs.Args()...)
	if err != nil {
		return cantRun("report: %v", err)
	}
	s := report.Build(recs, *runID)
	s.Logs = fs.Args()
	switch *format {
	case "text":
		if err = s.Text(os.Stdout); err == nil && *stacks {
			err = s.Stacks(os.Stdout)
		}
	case "json":
		err = s.JSON(os.Stdout)
	case "markdown", "md":
		err = s.Markdown(os.Stdout, 0)
	default:
		return cantRun("report: bad --format %q: text, json or markdown", *format)
	}
	if err != nil {
		return cantRun("report: %v", err)
	}
	return nil
}
