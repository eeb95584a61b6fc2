package run

import (
	"fmt"
	"os"

	"github.com/nettrap/nettrap/gotest"
)

// A test binary run directly (`nettrap -- ./pkg.test`, built with go
// test -c) is a whole run that no other nettrap sums up: no go command
// above it (go test -exec: auditexec.go), no outer nettrap. It leaves the
// trace the other ways of running leave: its records go to the run's
// audit log (the one --audit-log names, or a kept nettrap-run-* one,
// prepareAuditLog), and a run that recorded anything ends with the run's
// summary naming that log (finishRun); a run with no record prints
// nothing of its own, its output unchanged, and leaves no log.

// binaryRun is the log and the summary of a test binary run directly.
type binaryRun struct {
	log *runLog
	out *summaryOut
}

// directBinary: o is a test binary that neither go test nor a nettrap
// started.
func directBinary(o Options) bool {
	return o.Kind == TestBinary && o.OuterRun == "" && !gotest.ParentIsGo()
}

// prepareBinaryRun readies the run's summary and audit log. A log the
// user named must work; without one, a run that cannot make its
// directory (no writable TMPDIR) goes on with the lines in the output
// alone, and says so.
func prepareBinaryRun(o Options) (*binaryRun, error) {
	out, err := openSummary(o)
	if err != nil {
		return nil, cantRun("%v", err)
	}
	log, err := prepareAuditLog(o.AuditLog)
	if err != nil {
		out.close()
		if o.AuditLog != "" {
			return nil, cantRun("%v", err)
		}
		fmt.Fprintf(os.Stderr, "nettrap: the run keeps no audit log and prints no summary: %v (set TMPDIR to a writable directory)\n", err)
		return nil, nil
	}
	return &binaryRun{log: log, out: out}, nil
}

// end: from here the run's end settles its directory (see runLog), also
// where nettrap fails on the log, whose error names it.
func (b *binaryRun) end() {
	if b != nil {
		b.log.ended = true
	}
}

// finish, the log closed, prints the run's summary when the run recorded
// anything (finishRun, which also reports to GitHub Actions there); the
// status stays the test binary's unless nettrap failed.
func (b *binaryRun) finish(o Options, status int) int {
	return finishRun(o, b.log, b.out, status)
}

// drop gives up the run's directory unless the run's end settled it, and
// the summary file.
func (b *binaryRun) drop() {
	if b != nil {
		b.log.abort()
		b.out.close()
	}
}
