package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nettrap/nettrap/integration/internal/fakehost"
	"github.com/nettrap/nettrap/integration/internal/sandbox"
	"github.com/nettrap/nettrap/integration/internal/victimbuild"
)

// nettrapRun is the outcome of one nettrap run.
type nettrapRun struct {
	stdout, stderr string
	code           int
}

// runNettrap runs the nettrap binary with args inside the sandbox.
func runNettrap(t *testing.T, args ...string) nettrapRun {
	t.Helper()
	sandbox.Require(t)
	bin := nettrapBin(t)
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := exitCode(err)
	if code < 0 {
		t.Fatalf("nettrap %s: %v\nstderr: %s", strings.Join(args, " "), err, stderr.String())
	}
	return nettrapRun{dropNotice(stdout.String()), dropNotice(stderr.String()), code}
}

// confinedVictim runs the victim under nettrap (extra flags first) and
// returns nettrap's run and the victim's result.
func confinedVictim(t *testing.T, flags []string, args ...string) (nettrapRun, victimResult) {
	t.Helper()
	argv := append(append(append([]string{}, flags...), "--", victimbuild.Victim(t)), args...)
	run := runNettrap(t, argv...)
	// The victim exits 0; nettrap makes that 1 when it denied an attempt
	// (docs/audit.md#exit-status), and says so.
	want := 0
	if len(blockedLines(run.stderr)) > 0 {
		want = 1
	}
	if run.code != want {
		t.Fatalf("nettrap %q: exit %d, want %d\nstdout: %s\nstderr: %s", argv, run.code, want, run.stdout, run.stderr)
	}
	return run, parseVictim(t, []byte(run.stdout), run.stderr)
}

// blockedLines returns nettrap's denial lines in stderr (a blocked lookup
// the DNS sinkhole read has a line of its own).
func blockedLines(stderr string) []string {
	return append(linesWithPrefix(stderr, "nettrap: Outbound network blocked: "),
		linesWithPrefix(stderr, "nettrap: DNS lookup blocked: ")...)
}

// assertNothingArrived proves that nothing reached the endpoints eps
// after c (taken before the run under test): see fakehost's Host.Arrived.
func assertNothingArrived(t *testing.T, h *fakehost.Host, c fakehost.Cursor, eps ...fakehost.Endpoint) {
	t.Helper()
	for _, e := range eps {
		leaks, err := h.Arrived(c, e, runTimeout)
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

// auditRecord is one line of nettrap's audit log (the fields the tests use).
type auditRecord struct {
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

// readAudit parses the JSONL audit log at path; every line must be a
// complete JSON object.
func readAudit(t *testing.T, path string) []auditRecord {
	t.Helper()
	return readJSONL[auditRecord](t, path)
}

// readJSONL parses a JSONL file into records of type T, failing the test
// on a torn or bad line.
func readJSONL[T any](t *testing.T, path string) []T {
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

func auditPath(t *testing.T) string { return filepath.Join(t.TempDir(), "audit.jsonl") }
