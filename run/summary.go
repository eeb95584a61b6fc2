package run

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/nettrap/nettrap/audit"
	"github.com/nettrap/nettrap/ghactions"
	"github.com/nettrap/nettrap/report"
	"github.com/nettrap/nettrap/tmpdir"
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
func openSummary(o Options) (*summaryOut, error) {
	switch o.Summary {
	case "stderr":
		return &summaryOut{w: os.Stderr}, nil
	case "off":
		return &summaryOut{w: io.Discard}, nil
	}
	f, err := os.Create(o.Summary)
	if err != nil {
		return nil, fmt.Errorf("bad %s: %w", o.Names.Source("summary"), err)
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

// runLog is a run's audit log and its private directory, which holds the
// default log (no --audit-log) and the mark the inner nettraps leave when
// they run a test binary: a run that ran none (go test on packages with no
// tests, a build that failed) ends without a summary.
//
// Whatever way a run ends, the directory is settled once. A run that
// stops short of its end (setup failed, the command could not start)
// removes it: abort, deferred where it is made. The run's end
// (confined.finish, finishRun) settles it itself: it releases it with a
// log the summary names (kept until tmpdir.Keep later runs kept theirs:
// tmpdir.Release), removes it when there is nothing to look at, and
// leaves it where nettrap failed on the log, whose error names it (a
// later run clears it, see tmpdir).
type runLog struct {
	path  string
	dir   string // "" when it could not be made (then the run is assumed to have run tests)
	temp  bool   // path is the default log, in dir
	ended bool   // the run reached its end, which settles dir: abort leaves it
}

// prepareAuditLog returns the run's audit log, absolute (the test binaries
// run in their package directories), creating it to check it can be
// written: in a new temporary directory unless the user named one.
func prepareAuditLog(userLog string) (*runLog, error) {
	// Made by tmpdir, so that a run killed by a signal leaves nothing
	// for good: the next run removes it.
	dir, err := tmpdir.Make("nettrap-run-")
	if err != nil && userLog == "" {
		return nil, fmt.Errorf("audit log directory: %w", err)
	}
	l := &runLog{path: userLog, dir: dir}
	if l.path == "" {
		l.path, l.temp = filepath.Join(dir, "audit.jsonl"), true
	}
	if l.path, err = filepath.Abs(l.path); err == nil {
		err = touchAuditLog(l.path)
	}
	if err != nil {
		l.remove()
		return nil, err
	}
	return l, nil
}

// ranMark is the file an inner nettrap creates in the run's directory
// (handed down as Inner.RunDir) when it runs a test binary.
const ranMark = "ran"

// markRan: this nettrap, started by an outer one (outerRun, see
// Options.OuterRun), runs a test binary.
func markRan(outerRun string) {
	if d := outerRun; filepath.IsAbs(d) {
		os.WriteFile(filepath.Join(d, ranMark), nil, 0o600)
	}
}

// ranTests: some inner nettrap ran a test binary (or there is no way to
// know).
func (l *runLog) ranTests() bool {
	if l.dir == "" {
		return true
	}
	_, err := os.Stat(filepath.Join(l.dir, ranMark))
	return err == nil
}

func touchAuditLog(path string) error {
	w, err := audit.Open(path)
	if err != nil {
		return err
	}
	return w.Close()
}

// release gives up the run's directory, which stays with the log the
// summary names: with no owner, no later run takes it for a killed run's;
// it goes once tmpdir.Keep later runs kept theirs.
func (l *runLog) release() {
	if l.dir != "" {
		if err := tmpdir.Release(l.dir); err != nil {
			fmt.Fprintf(os.Stderr, "nettrap: %v; a later run may remove the log\n", err)
		}
	}
}

// remove deletes the run's directory, with the default log if it is
// there; a log the user named stays.
func (l *runLog) remove() {
	if l.dir != "" {
		os.RemoveAll(l.dir)
	}
}

// abort removes the run's directory unless the run reached its end (see
// runLog); deferred where the directory is made.
func (l *runLog) abort() {
	if !l.ended {
		l.remove()
	}
}

// finishRun prints the summary of the run from the audit log, reports to
// GitHub Actions when there, and gives the exit status: the go command's,
// or 125 when nettrap itself failed somewhere. A temporary log with no
// record is removed (nothing to look at); one with records is kept, and
// the summary names it. The caller closes out when finishRun returns
// early (finishRun closes it itself, and checks, once the summary is in).
func finishRun(o Options, log *runLog, out *summaryOut, status int) int {
	log.ended = true
	recs, err := report.ReadFiles(log.path)
	if err != nil {
		fmt.Fprintf(os.Stderr, "nettrap: %v\n", err)
		return ExitCantRun
	}
	ours := slices.ContainsFunc(recs, func(r audit.Record) bool { return r.RunID == o.RunID })
	if !ours && !log.ranTests() {
		// go test -c, packages with no tests, a build that failed:
		// nothing ran, nothing to sum up.
		log.remove()
		return status
	}
	if recs, err = addUnusedRules(o, log.path, recs); err != nil {
		fmt.Fprintf(os.Stderr, "nettrap: audit log: %v\n", err)
		return ExitCantRun
	}
	ours = slices.ContainsFunc(recs, func(r audit.Record) bool { return r.RunID == o.RunID })
	s := report.Build(recs, o.RunID)
	if ours && log.temp {
		// Something to look at: keep the default log, and say where.
		os.Remove(filepath.Join(log.dir, ranMark))
		log.release()
	} else {
		log.remove()
	}
	if ours || !log.temp {
		s.Logs = []string{log.path}
	}
	if len(s.RunIDs) == 0 {
		s.RunIDs = []string{o.RunID}
	}
	if err := s.Text(out.w); err != nil {
		fmt.Fprintf(os.Stderr, "nettrap: summary: %v\n", err)
		return ExitCantRun
	}
	if ghactions.Enabled(os.Getenv) {
		if o.Kind == TestBinary {
			s.Scope = o.Package // the step summary's block names it
		}
		reportToGitHub(s)
	}
	if err := out.close(); err != nil {
		fmt.Fprintf(os.Stderr, "nettrap: summary: %v\n", err)
		return ExitCantRun
	}
	if s.Totals.Errors > 0 {
		return ExitCantRun
	}
	return status
}

// reportToGitHub puts the summary where GitHub Actions shows it: an
// annotation per finding, and the step summary.
func reportToGitHub(s *report.Summary) {
	if err := ghactions.Annotate(os.Stderr, s); err != nil {
		fmt.Fprintf(os.Stderr, "nettrap: annotations: %v\n", err)
	}
	if p := os.Getenv("GITHUB_STEP_SUMMARY"); p != "" {
		if err := ghactions.AppendStepSummary(p, s); err != nil {
			fmt.Fprintf(os.Stderr, "nettrap: %v\n", err)
		}
	}
}
