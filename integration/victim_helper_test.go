package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/nettrap/nettrap/integration/internal/harness"
	"github.com/nettrap/nettrap/integration/internal/victimbuild"
)

// victimResult is the victim's JSON line.
type victimResult struct {
	Op     string          `json:"op"`
	OK     bool            `json:"ok"`
	Errno  string          `json:"errno"`
	Err    string          `json:"err"`
	Value  json.RawMessage `json:"value"`
	Child  json.RawMessage `json:"child"`
	Signal string          `json:"signal"`
}

// runVictim runs the victim directly (no nettrap) and returns its result.
func runVictim(t *testing.T, args ...string) victimResult {
	t.Helper()
	return runParsed(t, victimbuild.Victim(t), args...)
}

// runParsed runs prog and parses the victim JSON line it prints.
func runParsed(t *testing.T, prog string, args ...string) victimResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), harness.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, prog, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\nstdout: %s\nstderr: %s", prog, strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return parseVictim(t, stdout.Bytes(), stderr.String())
}

func parseVictim(t *testing.T, out []byte, stderr string) victimResult {
	t.Helper()
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	if len(lines) != 1 {
		t.Fatalf("victim printed %d lines, want 1:\n%s\nstderr: %s", len(lines), out, stderr)
	}
	var r victimResult
	dec := json.NewDecoder(bytes.NewReader(lines[0]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("victim output %q: %v", lines[0], err)
	}
	return r
}

// mustOK fails t unless the victim's operation succeeded.
func mustOK(t *testing.T, r victimResult) {
	t.Helper()
	if !r.OK || r.Errno != "" || r.Err != "" {
		t.Fatalf("victim %s failed: errno=%q err=%q signal=%q", r.Op, r.Errno, r.Err, r.Signal)
	}
}

// value decodes the victim's value into v.
func value[T any](t *testing.T, r victimResult) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(r.Value, &v); err != nil {
		t.Fatalf("victim %s value %s: %v", r.Op, r.Value, err)
	}
	return v
}
