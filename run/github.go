package run

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/nettrap/nettrap/audit"
	"github.com/nettrap/nettrap/ghactions"
	"github.com/nettrap/nettrap/gotest"
	"github.com/nettrap/nettrap/procfs"
	"github.com/nettrap/nettrap/report"
)

// A test binary's nettrap that go test -exec started (one per package,
// several at once) ends with no run summary, which is what finishRun
// reports to GitHub Actions from. On GitHub Actions it reports its own
// findings instead, from the records its guard kept
// (guard.Guard.Keep): it may have no audit log to read them back from.
// Under an outer nettrap (nettrap -- go test, --cache=off, a hub) the
// outer reports the whole run; a test binary run directly (nettrap --
// ./pkg.test) ends with the run's summary (testbinary.go), and reports
// from it, but where it could make no log.

// reportsToGitHub: c reports its test binary's findings to GitHub
// Actions itself, not from a run summary.
func (c *confined) reportsToGitHub() bool {
	return c.o.Kind == TestBinary && c.o.OuterRun == "" && c.own == nil && ghactions.Enabled(os.Getenv)
}

// reportBinaryToGitHub reports a test binary's records. Under go test,
// whose test binaries run in parallel, its nettraps share the step's
// annotations and step summary (ghactions.ReportShared: ten annotations
// in all, none twice, one block per package with findings), and the
// annotations go to the go command's own stderr, where the runner reads
// them at the start of a line: the binary's output is the package's,
// which go test -json wraps in JSON and go test hides when it passes.
func reportBinaryToGitHub(o Options, recs []audit.Record) {
	s := report.Build(recs, o.RunID)
	s.RunIDs, s.Scope = []string{o.RunID}, o.Package
	if o.AuditLog != "" {
		s.Logs = []string{o.AuditLog}
	}
	if !gotest.ParentIsGo() {
		reportToGitHub(s)
		return
	}
	state, err := gitHubState()
	if err != nil {
		fmt.Fprintf(os.Stderr, "nettrap: annotations: %v\n", err)
		return
	}
	var w io.Writer = os.Stderr
	if g, err := goStderr(); err == nil {
		defer g.Close()
		w = g
	}
	if err := ghactions.ReportShared(w, s, state, os.Getenv("GITHUB_STEP_SUMMARY")); err != nil {
		fmt.Fprintf(os.Stderr, "nettrap: %v\n", err)
	}
}

// gitHubState is the file the nettraps of one go command share
// (ghactions.ReportShared), named after it (its pid and start time) in
// a directory of this user's; the files of go commands that are gone
// are removed first.
func gitHubState() (string, error) {
	dir, err := privateDir(filepath.Join(os.TempDir(), fmt.Sprintf("nettrap-github-%d", os.Getuid())))
	if err != nil {
		return "", err
	}
	removeGoneStates(dir)
	ppid := os.Getppid()
	start, err := procfs.StartTime(ppid)
	if err != nil {
		return "", fmt.Errorf("the go command's start: %w", err)
	}
	return filepath.Join(dir, fmt.Sprintf("go-test-%d-%d", ppid, start)), nil
}

// removeGoneStates removes the state files in dir whose go command has
// exited: its pid is gone, or another process's now.
func removeGoneStates(dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		pid, start, ok := parseState(e.Name())
		if !ok {
			continue
		}
		if now, err := procfs.StartTime(pid); err != nil || now != start {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// parseState reads "go-test-PID-START".
func parseState(name string) (pid int, start uint64, ok bool) {
	rest, ok := strings.CutPrefix(name, "go-test-")
	if !ok {
		return 0, 0, false
	}
	p, s, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, 0, false
	}
	pid, err1 := strconv.Atoi(p)
	start, err2 := strconv.ParseUint(s, 10, 64)
	return pid, start, err1 == nil && err2 == nil && pid > 0
}

// goStderr opens the go command's own stderr anew through /proc
// (O_APPEND: a file is not written over): the terminal or the CI job's
// log, where go test puts its own lines. Never its stdout, which -json
// keeps for JSON.
func goStderr() (io.WriteCloser, error) {
	return os.OpenFile(fmt.Sprintf("%s/%d/fd/2", procfs.Root, os.Getppid()), os.O_WRONLY|os.O_APPEND, 0)
}
