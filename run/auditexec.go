package run

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/nettrap/nettrap/audit"
	"github.com/nettrap/nettrap/gotest"
	"github.com/nettrap/nettrap/procfs"
	"github.com/nettrap/nettrap/report"
	"github.com/nettrap/nettrap/tmpdir"
)

// `go test -exec nettrap ./...`: each test binary has its own nettrap,
// and none sees the whole run, so none ends it with the run's summary.
// What each one leaves is its package's:
//
//   - the findings go to an audit log: the one --audit-log names
//     (absolute), or else one per go command (its pid and start time
//     name it), made only when the first finding comes; the last
//     tmpdir.Keep of those stay (pruneExecLogs);
//   - a nettrap whose package had findings prints their summary, once,
//     in the package's output (its stderr, which go test shows for a
//     failed package, and for every package with -v or -json), naming
//     the log (execSummary);
//   - under --mode=audit, where go test hides a passing package's
//     output and the "audit: would block" lines of a migration run
//     would mostly be lost, the first nettrap with a finding also says
//     where the log is, once for the whole go test run, on the go
//     command's own stderr (sayExecAuditLog).

// plainExec: o is a test binary that go test -exec started, with no
// nettrap above it (an outer nettrap sums the run up itself).
func plainExec(o Options) bool {
	return o.Kind == TestBinary && o.OuterRun == "" && gotest.ParentIsGo()
}

// execAuditLog returns the log of a test binary that go test -exec
// started with no log named and no nettrap above, or "" when o is not
// that.
func execAuditLog(o Options) (string, error) {
	if !plainExec(o) || o.AuditLog != "" {
		return "", nil
	}
	ppid := os.Getppid()
	start, err := procfs.StartTime(ppid)
	if err != nil {
		return "", fmt.Errorf("audit log: the go command's start: %w", err)
	}
	dir, err := privateDir(filepath.Join(os.TempDir(), fmt.Sprintf("nettrap-audit-%d", os.Getuid())))
	if err != nil {
		return "", fmt.Errorf("audit log: %w", err)
	}
	return filepath.Join(dir, fmt.Sprintf("go-test-%d-%d.jsonl", ppid, start)), nil
}

// goCommandRunID is the run id of a test binary go test -exec started
// with no nettrap above (plainExec): one for the go command, from its
// pid and start time, so that the nettraps of one go test run share it
// as they share its log; "" for any other run, or where the go command
// cannot be told.
func goCommandRunID(o Options) string {
	if !plainExec(o) {
		return ""
	}
	ppid := os.Getppid()
	start, err := procfs.StartTime(ppid)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(fmt.Appendf(nil, "go test %d %d", ppid, start))
	return hex.EncodeToString(sum[:8])
}

// execSummary prints the summary of the package's findings in log (the
// records of this run of package pkg) to w, naming log; nothing when
// the package had none to show (allowed attempts alone, no record).
func execSummary(w io.Writer, log, runID, pkg string) error {
	recs, err := report.ReadFiles(log)
	if err != nil {
		return err
	}
	recs = slices.DeleteFunc(recs, func(r audit.Record) bool { return r.Package != pkg })
	s := report.Build(recs, runID)
	if s.Clean() {
		return nil
	}
	s.Logs = []string{log}
	return s.Text(w)
}

// pruneExecLogs removes the per-go-command logs in dir (execAuditLog)
// but the tmpdir.Keep last written, and their marks: a machine that
// runs go test -exec nettrap all day does not gather them for good.
func pruneExecLogs(dir string) {
	logs, _ := filepath.Glob(filepath.Join(dir, "go-test-*.jsonl"))
	type written struct {
		path string
		at   time.Time
	}
	var ws []written
	for _, p := range logs {
		if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() {
			ws = append(ws, written{p, fi.ModTime()})
		}
	}
	slices.SortFunc(ws, func(a, b written) int { return b.at.Compare(a.at) })
	for _, w := range ws[min(tmpdir.Keep, len(ws)):] {
		os.Remove(w.path)
		os.Remove(w.path + ".said")
	}
}

// privateDir makes dir (mode 0700) unless it is there, and refuses one
// that is not a directory of this user's that only it may enter: in a
// shared /tmp another user could have made it first, or a link.
func privateDir(dir string) (string, error) {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return "", err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return "", err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok || int(st.Uid) != os.Getuid() || fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("%s is not a directory that only this user (uid %d) may enter", dir, os.Getuid())
	}
	return dir, nil
}

// sayExecAuditLog tells where the findings went, once per log: the
// nettrap that makes the log's ".said" mark says it. Only a run that
// wrote a finding (the log opened) speaks.
func sayExecAuditLog(path string, log *audit.Writer, stderr io.Writer) {
	if log == nil || !log.Opened() {
		return
	}
	mark, err := os.OpenFile(path+".said", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return // said already (or cannot tell: the log is there all the same)
	}
	mark.Close()
	line := fmt.Sprintf("nettrap: audit mode: the findings of this go test run are in %s (nettrap report %s); --audit-log FILE chooses the file\n", path, path)
	// The go command's own stderr (goStderr): go test hides a passing
	// package's output.
	if w, err := goStderr(); err == nil {
		defer w.Close()
		if _, err := io.WriteString(w, line); err == nil {
			return
		}
	}
	io.WriteString(stderr, line)
}
