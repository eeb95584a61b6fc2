package integration

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/nettrap/nettrap/integration/internal/sandbox"
)

// runFixtureDir is the module whose packages `nettrap -- go test` runs:
// leaky, clean, TestMain-leaky and parallel packages, aiming only at the
// sandbox's fake hosts.
func runFixtureDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.Abs(filepath.Join("testdata", "run"))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// runModEnv is the environment for the go command in the fixture module: no
// module downloads, no toolchain switch, the fixtures switched on.
func runModEnv(extra ...string) []string {
	env := []string{"GOPROXY=off", "GOTOOLCHAIN=local", "GOWORK=off", "GOFLAGS=", "NTRUNFIX=1"}
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "NETTRAP_") || strings.HasPrefix(k, "GITHUB_") || k == "GOFLAGS" {
			continue
		}
		out = append(out, kv)
	}
	return append(append(out, env...), extra...)
}

// runModIn runs prog with args in the fixture module, in the sandbox.
func runModIn(t *testing.T, env []string, prog string, args ...string) nettrapRun {
	t.Helper()
	return runModAt(t, runFixtureDir(t), nil, env, prog, args...)
}

// runModAt runs prog with args in dir (a copy of the fixture module), in
// the sandbox, as cred's user (nil: the test's own).
func runModAt(t *testing.T, dir string, cred *syscall.Credential, env []string, prog string, args ...string) nettrapRun {
	t.Helper()
	sandbox.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
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
	code := exitCode(err)
	if code < 0 {
		t.Fatalf("%s %s: %v\nstderr: %s", prog, strings.Join(args, " "), err, stderr.String())
	}
	return nettrapRun{dropNotice(stdout.String()), dropNotice(stderr.String()), code}
}

// runModGoTest runs `nettrap FLAGS -- go test ARGS` in the fixture module.
func runModGoTest(t *testing.T, env []string, flags []string, goTestArgs ...string) nettrapRun {
	t.Helper()
	args := append(append(append([]string{}, flags...), "--", "go", "test"), goTestArgs...)
	return runModIn(t, env, nettrapBin(t), args...)
}

// runAuditRecord is an audit record with the fields of Go test attribution.
type runAuditRecord struct {
	auditRecord
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
	return linesWithPrefix(stderr, "nettrap: ")
}

// linesWithPrefix returns the lines of s that start with prefix.
func linesWithPrefix(s, prefix string) []string {
	var out []string
	for line := range strings.SplitSeq(s, "\n") {
		if strings.HasPrefix(line, prefix) {
			out = append(out, line)
		}
	}
	return out
}
