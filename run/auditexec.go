package run

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"github.com/nettrap/nettrap/audit"
	"github.com/nettrap/nettrap/gotest"
	"github.com/nettrap/nettrap/policy"
	"github.com/nettrap/nettrap/procfs"
)

// `go test -exec 'nettrap --mode=audit' ./...` with no --audit-log: each
// test binary has its own nettrap, and go test shows a passing package's
// output only with -v or -json, so the "audit: would block" lines of a
// migration run would mostly be lost. Instead the findings of every
// package go to one log per go command (its pid and start time name it),
// made only when the first finding comes, and the first nettrap with a
// finding says where it is, once for the whole go test run, on the go
// command's own stderr (go test would hide the test binary's).

// execAuditLog returns the log of an audit-mode test binary that go test
// -exec started with no log named, or "" when o is not that.
func execAuditLog(o Options) (string, error) {
	if o.Kind != TestBinary || o.Policy.Mode != policy.Audit || o.AuditLog != "" || !gotest.ParentIsGo() {
		return "", nil
	}
	ppid := os.Getppid()
	start, err := procfs.StartTime(ppid)
	if err != nil {
		return "", fmt.Errorf("audit mode: the go command's start: %w", err)
	}
	dir, err := privateDir(filepath.Join(os.TempDir(), fmt.Sprintf("nettrap-audit-%d", os.Getuid())))
	if err != nil {
		return "", fmt.Errorf("audit mode: %w", err)
	}
	return filepath.Join(dir, fmt.Sprintf("go-test-%d-%d.jsonl", ppid, start)), nil
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
