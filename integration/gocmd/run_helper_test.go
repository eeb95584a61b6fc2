package gocmd

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/nettrap/nettrap/integration/internal/harness"
	"github.com/nettrap/nettrap/integration/internal/lab"
	"github.com/nettrap/nettrap/integration/internal/runmod"
	"github.com/nettrap/nettrap/integration/internal/sandbox"
)

// runModIn runs prog with args in the fixture module, in the sandbox.
func runModIn(t *testing.T, env []string, prog string, args ...string) harness.Run {
	t.Helper()
	return runModAt(t, runmod.Dir(t), nil, env, prog, args...)
}

// runModAt runs prog with args in dir (a copy of the fixture module), in
// the sandbox, as cred's user (nil: the test's own).
func runModAt(t *testing.T, dir string, cred *syscall.Credential, env []string, prog string, args ...string) harness.Run {
	t.Helper()
	sandbox.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), harness.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, prog, args...)
	cmd.Dir = dir
	cmd.Env = env
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := harness.ExitCode(err)
	if code < 0 {
		t.Fatalf("%s %s: %v\nstderr: %s", prog, strings.Join(args, " "), err, stderr.String())
	}
	return harness.Run{Stdout: lab.DropNotice(stdout.String()), Stderr: lab.DropNotice(stderr.String()), Code: code}
}

// runModGoTest runs `nettrap FLAGS -- go test ARGS` in the fixture module.
func runModGoTest(t *testing.T, env []string, flags []string, goTestArgs ...string) harness.Run {
	t.Helper()
	args := append(append(append([]string{}, flags...), "--", "go", "test"), goTestArgs...)
	return runModIn(t, env, harness.Nettrap(t), args...)
}

// runAuditRecord is an audit record with the fields of Go test attribution.
type runAuditRecord struct {
	harness.AuditRecord
	Package    string   `json:"package"`
	Test       string   `json:"test"`
	Candidates []string `json:"candidates"`
	Marked     bool     `json:"marked"`
	AllowTest  []string `json:"allow_test"`
	// MarkerValue: a bad marker's value.
	MarkerValue string `json:"marker_value"`
}

// nettrapLines are the lines of stderr that nettrap's summary wrote.
func nettrapLines(stderr string) []string {
	return harness.LinesWithPrefix(stderr, "nettrap: ")
}
