package harness

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/nettrap/nettrap/integration/internal/lab"
	"github.com/nettrap/nettrap/integration/internal/sandbox"
	"github.com/nettrap/nettrap/integration/internal/victimbuild"
)

// Timeout only bounds a hung run; nothing here is expected to be slow.
const Timeout = 2 * time.Minute

// Run is the outcome of one run of nettrap (or of another program).
type Run struct {
	Stdout, Stderr string
	Code           int
}

// Nettrap is the nettrap every test starts: the binary itself, or under
// an engine variant (NETTRAP_TEST_ENGINE: ptrace, parent,
// parent-connect; see lab.Variant) the lab's script that starts it that
// way. The lab's own runs use lab.Bins.Nettrap, the same script.
func Nettrap(t testing.TB) string {
	t.Helper()
	if lab.TestVariant(t) == lab.VariantDefault {
		return victimbuild.Nettrap(t)
	}
	return lab.Programs(t).Nettrap
}

// RunNettrap runs the nettrap binary with args inside the sandbox.
func RunNettrap(t *testing.T, args ...string) Run {
	t.Helper()
	sandbox.Require(t)
	bin := Nettrap(t)
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := ExitCode(err)
	if code < 0 {
		t.Fatalf("nettrap %s: %v\nstderr: %s", strings.Join(args, " "), err, stderr.String())
	}
	return Run{Stdout: lab.DropNotice(stdout.String()), Stderr: lab.DropNotice(stderr.String()), Code: code}
}

// RunIn runs prog with args in dir with the environment env, and drops
// nettrap's notice of its fallback to the ptrace engine from its output
// (lab.DropNotice).
func RunIn(t *testing.T, dir string, env []string, prog string, args ...string) Run {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, prog, args...)
	cmd.Dir, cmd.Env = dir, env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	code := ExitCode(cmd.Run())
	if code < 0 {
		t.Fatalf("%s %q did not exit normally\nstdout: %s\nstderr: %s", prog, args, stdout.String(), stderr.String())
	}
	return Run{Stdout: lab.DropNotice(stdout.String()), Stderr: lab.DropNotice(stderr.String()), Code: code}
}

// GoEnv is the environment of the go command on a fixture module: no
// network (GOPROXY=off, no toolchain download), no workspace, and no
// NETTRAP_* settings from the caller, nor GITHUB_* ones (a nettrap run
// on GitHub Actions would annotate the job and append to its step
// summary; the tests that want that say so); then extra.
func GoEnv(extra ...string) []string {
	env := append(Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off", "GOTOOLCHAIN=local")
	return append(env, extra...)
}

// Environ is the test's environment without the NETTRAP_* and GITHUB_*
// variables and GOFLAGS, for a go command or nettrap run that sets its
// own.
func Environ() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "NETTRAP_") || strings.HasPrefix(k, "GITHUB_") || k == "GOFLAGS" {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// ExitCode is the exit status in err (0 for nil, -1 when not an exit).
func ExitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// Pause waits a little between polls of something outside our control.
func Pause(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Millisecond):
	}
}

// OpenTempDir is a temporary directory with mode perm, removed after the
// test: not under t.TempDir, whose parent is 0700, so that nobody can
// enter it.
func OpenTempDir(t *testing.T, prefix string, perm os.FileMode) string {
	t.Helper()
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, perm); err != nil {
		t.Fatal(err)
	}
	return dir
}
