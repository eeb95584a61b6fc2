package audit

import (
	"encoding/json"
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// Writer appends records to a JSONL file that many processes may share
// (every test binary of a `go test ./...` run writes to the same log).
//
// Each record is encoded first and written with one write(2) on an
// O_APPEND descriptor, under an exclusive flock: O_APPEND alone makes the
// offset atomic but lets a short write tear a line; the lock keeps other
// writers out until the whole line is down. A write that fails (a full
// disk) is reported to the caller with the record, so that it can be
// printed elsewhere and the run marked as not fully audited.
type Writer struct {
	mu   sync.Mutex
	f    *os.File
	path string // OpenOnFirstWrite's, until the first record opens it
}

// Open opens (creating if needed) the audit log at path for appending.
func Open(path string) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open audit log: %w", err)
	}
	return &Writer{f: f}, nil
}

// OpenOnFirstWrite is Open, but the file is made only when the first
// record comes: a run that finds nothing leaves no file behind (the
// audit mode of go test -exec, whose log no one named; run/auditexec.go).
func OpenOnFirstWrite(path string) *Writer { return &Writer{path: path} }

// Opened tells whether the log is open: always after Open, after the
// first record with OpenOnFirstWrite.
func (w *Writer) Opened() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.f != nil
}

// Write appends one record as one line.
func (w *Writer) Write(r Record) error {
	if r.Schema == 0 {
		r.Schema = SchemaVersion
	}
	line, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode audit record: %w", err)
	}
	line = append(line, '\n')
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		f, err := os.OpenFile(w.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return fmt.Errorf("open audit log: %w", err)
		}
		w.f = f
	}
	fd := int(w.f.Fd())
	if err := flockRetry(fd, unix.LOCK_EX); err != nil {
		return fmt.Errorf("lock audit log: %w", err)
	}
	defer flockRetry(fd, unix.LOCK_UN)
	for len(line) > 0 {
		n, err := w.f.Write(line)
		if err != nil {
			return fmt.Errorf("write audit log %s: %w", w.f.Name(), err)
		}
		line = line[n:]
	}
	return nil
}

// Close closes the log, reporting a failed flush (e.g. on NFS).
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return nil
	}
	if err := w.f.Close(); err != nil {
		return fmt.Errorf("close audit log: %w", err)
	}
	return nil
}

func flockRetry(fd, how int) error {
	for {
		err := unix.Flock(fd, how)
		if err != unix.EINTR {
			if err != nil {
				return os.NewSyscallError("flock", err)
			}
			return nil
		}
	}
}
