package harness

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nettrap/nettrap/integration/internal/fakehost"
)

// LinesWithPrefix returns the lines of s that start with prefix.
func LinesWithPrefix(s, prefix string) []string {
	var out []string
	for line := range strings.SplitSeq(s, "\n") {
		if strings.HasPrefix(line, prefix) {
			out = append(out, line)
		}
	}
	return out
}

// BlockedLines returns nettrap's denial lines in stderr (a blocked lookup
// the DNS sinkhole read has a line of its own).
func BlockedLines(stderr string) []string {
	return append(LinesWithPrefix(stderr, "nettrap: Outbound network blocked: "),
		LinesWithPrefix(stderr, "nettrap: DNS lookup blocked: ")...)
}

// AssertNothingArrived proves that nothing reached the endpoints eps
// after c (taken before the run under test): see fakehost's Host.Arrived.
func AssertNothingArrived(t *testing.T, h *fakehost.Host, c fakehost.Cursor, eps ...fakehost.Endpoint) {
	t.Helper()
	for _, e := range eps {
		leaks, err := h.Arrived(c, e, Timeout)
		if err != nil {
			t.Fatalf("%v:\n%s", err, h.Dump())
		}
		if len(leaks) > 0 {
			var lines []string
			for _, r := range leaks {
				lines = append(lines, r.String())
			}
			t.Errorf("LEAK: %s received traffic under nettrap:\n%s", e, strings.Join(lines, "\n"))
		}
	}
}

// AuditRecord is one line of nettrap's audit log (the fields the tests use).
type AuditRecord struct {
	Schema   json.RawMessage `json:"schema"`
	Time     string          `json:"time"`
	RunID    string          `json:"run_id"`
	PID      int             `json:"pid"`
	TID      int             `json:"tid"`
	Exe      string          `json:"exe"`
	Argv0    string          `json:"argv0"`
	Syscall  string          `json:"syscall"`
	Family   string          `json:"family"`
	SockType string          `json:"sock_type"`
	Dest     string          `json:"dest"`
	Class    string          `json:"class"`
	Lookup   string          `json:"lookup"`
	Decision string          `json:"decision"`
	Reason   string          `json:"reason"`
}

// ReadAudit parses the JSONL audit log at path; every line must be a
// complete JSON object.
func ReadAudit(t *testing.T, path string) []AuditRecord {
	t.Helper()
	return ReadJSONL[AuditRecord](t, path)
}

// ReadJSONL parses a JSONL file into records of type T, failing the test
// on a torn or bad line.
func ReadJSONL[T any](t *testing.T, path string) []T {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("audit log: %v", err)
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r T
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("audit line %q: %v", sc.Text(), err)
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// AuditPath is where a run of t's may write its audit log.
func AuditPath(t *testing.T) string { return filepath.Join(t.TempDir(), "audit.jsonl") }
