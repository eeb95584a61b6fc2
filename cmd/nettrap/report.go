package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"

	"github.com/nettrap/nettrap/ghactions"
	"github.com/nettrap/nettrap/report"
	"github.com/nettrap/nettrap/run"
)

const reportUsage = `Usage: nettrap report [--format=text|json|markdown] [--run-id ID] [--stacks] [--github=auto|on|off] [--exit-zero] AUDIT_LOG...

Prints the summary of one or more audit logs (e.g. merged from CI shards):
per package and test, what was blocked, what marked tests were allowed,
stale markers and attempts at collection time, then the totals; with
--stacks, the whole stack of each blocked attempt's row.

On GitHub Actions (GITHUB_ACTIONS=true; --github=auto) it also writes an
::error annotation per blocked attempt and bad marker on stderr (at most
10) and appends the Markdown summary to $GITHUB_STEP_SUMMARY, as a run
does; --github=off writes neither, --github=on writes them anywhere.

Exit status: 1 when the logs hold what fails a run (a blocked attempt, in
a test or at collection time, a bad marker, an error of nettrap's), so
that a CI job fails on it (--exit-zero: 0 all the same); else 0; 125
when a log cannot be read or is damaged.

Flags:
`

// runReport is `nettrap report`.
func runReport(args []string) error {
	return reportTo(args, os.Stdout, os.Stderr, os.Getenv)
}

// reportTo is runReport writing to stdout and stderr, in the
// environment getenv reads.
func reportTo(args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	fs := pflag.NewFlagSet("nettrap report", pflag.ContinueOnError)
	format := fs.String("format", "text", "`FORMAT` of the summary: text, json or markdown")
	runID := fs.String("run-id", "", "only the records of run `ID`")
	stacks := fs.Bool("stacks", false, "with --format=text, print after the summary the whole stack of each row of blocked attempts (its first attempt's; the test output shows only the module's frames); json has them always")
	github := fs.String("github", "auto", "`WHEN` to write GitHub Actions annotations and the step summary: auto (on GitHub Actions), on or off")
	exitZero := fs.Bool("exit-zero", false, "exit 0 even when the logs hold blocked attempts")
	// Help asked for goes to stdout; an error is one line on stderr.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			fmt.Fprint(stdout, reportUsage)
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return nil
		}
		return cantRun("report: %v (see nettrap report --help)", suggestFlag(fs, err))
	}
	if fs.NArg() == 0 {
		return cantRun("report: no audit log given: nettrap report [--format=text|json|markdown] AUDIT_LOG...")
	}
	toGitHub, err := reportGitHub(*github, getenv)
	if err != nil {
		return err
	}
	recs, err := report.ReadFiles(fs.Args()...)
	if err != nil {
		return cantRun("report: %v", err)
	}
	s := report.Build(recs, *runID)
	s.Logs = fs.Args()
	switch *format {
	case "text":
		if err = s.Text(stdout); err == nil && *stacks {
			err = s.Stacks(stdout)
		}
	case "json":
		err = s.JSON(stdout)
	case "markdown", "md":
		err = s.Markdown(stdout, 0)
	default:
		return cantRun("report: bad --format %q: text, json or markdown", *format)
	}
	if err != nil {
		return cantRun("report: %v", err)
	}
	if toGitHub {
		if err := reportToGitHub(s, stderr, getenv("GITHUB_STEP_SUMMARY")); err != nil {
			return cantRun("report: %v", err)
		}
	}
	if s.Fails() && !*exitZero {
		return &run.ExitError{Code: 1}
	}
	return nil
}

// reportGitHub tells whether the report goes to GitHub Actions too:
// --github=auto does on GitHub Actions, where the report is most often
// the step that sums up a job's shards and must show there.
func reportGitHub(when string, getenv func(string) string) (bool, error) {
	switch when {
	case "auto":
		return ghactions.Enabled(getenv), nil
	case "on":
		return true, nil
	case "off":
		return false, nil
	}
	return false, cantRun("report: bad --github %q: auto, on or off", when)
}

// reportToGitHub writes the annotations on stderr and appends the
// Markdown summary to the step summary file, when one is named.
func reportToGitHub(s *report.Summary, stderr io.Writer, stepSummary string) error {
	if err := ghactions.Annotate(stderr, s); err != nil {
		return fmt.Errorf("annotations: %w", err)
	}
	if stepSummary != "" {
		return ghactions.AppendStepSummary(stepSummary, s)
	}
	return nil
}
