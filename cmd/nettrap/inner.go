package main

import (
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nettrap/nettrap/audit"
	"github.com/nettrap/nettrap/gotest"
)

// noteFailure: a nettrap started by `nettrap -- go test` (through -exec)
// that could not do its job says so in the run's audit log, so that the
// outer nettrap ends the run with status 125 instead of the go command's
// plain 1. Best effort: the reason is on stderr already.
func noteFailure(args []string) {
	runID, logPath := os.Getenv(envName("run-id")), os.Getenv(envName("audit-log"))
	// A relative log would land in the package directory, where the
	// go command runs the test binary.
	if failure == "" || runID == "" || !filepath.IsAbs(logPath) {
		return
	}
	pkg, ok := gotest.TestPackage(testArgv(args))
	if !ok {
		return
	}
	w, err := audit.Open(logPath)
	if err != nil {
		return
	}
	defer w.Close()
	w.Write(audit.Record{Time: time.Now().UTC(), RunID: runID, Package: pkg,
		Decision: audit.NettrapError, Reason: failure})
}

// testArgv is args without nettrap's own flags in front.
func testArgv(args []string) []string {
	for i, a := range args {
		if a == "--" {
			return args[i+1:]
		}
		if !strings.HasPrefix(a, "-") {
			return args[i:]
		}
	}
	return nil
}
