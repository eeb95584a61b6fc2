package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/nettrap/nettrap/audit"
	"github.com/nettrap/nettrap/ghactions"
	"github.com/nettrap/nettrap/report"
)

// The run summary goes to stderr by default; --summary=off drops it and
// --summary=FILE writes it there, for a consumer that reads nettrap's
// output and takes every stderr line for an error (gotestsum
// --raw-command prints each one twice and counts it as an error).

// summaryOut is where a run's summary goes.
type summaryOut struct {
	w io.Writer
	f *os.File // --summary=FILE, created when the run starts
}

// openSummary checks the --summary destination before the run, so that a
// file that cannot be written fails at once rather than after the tests.
func openSummary(cfg *config) (*summaryOut, error) {
	switch cfg.summary {
	case "stderr":
		return &summaryOut{w: os.Stderr}, nil
	case "off":
		return &summaryOut{w: io.Discard}, nil
	}
	f, err := os.Create(cfg.summary)
	if err != nil {
		return nil, fmt.Errorf("bad %s: %w", cfg.source("summary"), err)
	}
	return &summaryOut{w: f, f: f}, nil
}

func (o *summaryOut) close() error {
	if o.f == nil {
		return nil
	}
	f := o.f
	o.f = nil
	return f.Close()
}

// runLog is a run's audit log; temp when nettrap made it (no
// --audit-log), in a directory of its own.
type runLog struct {
	path string
	temp bool
}

// prepareAuditLog returns the run's audit log, absolute (the test binaries
// run in their package directories), creating it to check it can be
// written: in a new temporary directory unless --audit-log.
func prepareAuditLog(cfg *config) (runLog, error) {
	l := runLog{path: cfg.auditLog}
	if l.path == "" {
		dir, err := os.MkdirTemp("", "nettrap-run-")
		if err != nil {
			return runLog{}, fmt.Errorf("audit log directory: %w", err)
		}
		l.path, l.temp = filepath.Join(dir, "audit.jsonl"), true
	}
	var err error
	if l.path, err = filepath.Abs(l.path); err != nil {
		return runLog{}, err
	}
	if err := touchAuditLog(l.path); err != nil {
		l.remove()
		return runLog{}, err
	}
	return l, nil
}

func touchAuditLog(path string) error {
	w, err := audit.Open(path)
	if err != nil {
		return err
	}
	return w.Close()
}

// remove deletes a temporary log and its directory; a log the user named
// stays.
func (l runLog) remove() {
	if l.temp && l.path != "" {
		os.RemoveAll(filepath.Dir(l.path))
	}
}

// finishRun prints the summary of the run from the audit log, reports to
// GitHub Actions when there, and gives the exit status: the go command's,
// or 125 when nettrap itself failed somewhere. A temporary log with no
// record is removed (nothing to look at); one with records is kept, and
// the summary names it.
func finishRun(cfg *config, log runLog, out *summaryOut, status int) int {
	defer out.close()
	recs, err := report.ReadFiles(log.path)
	if err != nil {
		fmt.Fprintf(os.Stderr, "nettrap: %v\n", err)
		return exitCantRun
	}
	s := report.Build(recs, cfg.runID)
	if len(recs) > 0 || !log.temp {
		s.Logs = []string{log.path}
	} else {
		log.remove()
	}
	if len(s.RunIDs) == 0 {
		s.RunIDs = []string{cfg.runID}
	}
	if err := s.Text(out.w); err != nil {
		fmt.Fprintf(os.Stderr, "nettrap: summary: %v\n", err)
		return exitCantRun
	}
	if ghactions.Enabled(os.Getenv) {
		if err := ghactions.Annotate(os.Stderr, s); err != nil {
			fmt.Fprintf(os.Stderr, "nettrap: annotations: %v\n", err)
		}
		if p := os.Getenv("GITHUB_STEP_SUMMARY"); p != "" {
			if err := ghactions.AppendStepSummary(p, s); err != nil {
				fmt.Fprintf(os.Stderr, "nettrap: %v\n", err)
			}
		}
	}
	if err := out.close(); err != nil {
		fmt.Fprintf(os.Stderr, "nettrap: summary: %v\n", err)
		return exitCantRun
	}
	if s.Totals.Errors > 0 {
		return exitCantRun
	}
	return status
}
