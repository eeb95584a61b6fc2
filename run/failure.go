package run

import (
	"path/filepath"
	"time"

	"github.com/nettrap/nettrap/audit"
	"github.com/nettrap/nettrap/gotest"
)

// NoteFailure: a nettrap started by `nettrap -- go test` (through -exec)
// that could not do its job (reason; status 125) says so in the run's
// audit log (logPath, runID: what the outer handed down), so that the
// outer nettrap ends the run with status 125 instead of the go command's
// plain 1. argv is the command nettrap was to run. Best effort: the reason
// is on stderr already.
func NoteFailure(logPath, runID string, argv []string, reason string) {
	// A relative log would land in the package directory, where the
	// go command runs the test binary.
	if reason == "" || runID == "" || !filepath.IsAbs(logPath) {
		return
	}
	pkg, ok := gotest.TestPackage(argv)
	if !ok {
		return
	}
	w, err := audit.Open(logPath)
	if err != nil {
		return
	}
	defer w.Close()
	w.Write(audit.Record{Time: time.Now().UTC(), RunID: runID, Package: pkg,
		Decision: audit.NettrapError, Reason: reason})
}
