package gocmd

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/nettrap/nettrap/integration/internal/harness"
	"github.com/nettrap/nettrap/integration/internal/lab"
	"github.com/nettrap/nettrap/integration/internal/runmod"
	"github.com/nettrap/nettrap/integration/internal/sandbox"
)

// TestEngineNoticeOnceForGoTest: `nettrap -- go test` on two packages
// under a listener above starts a nettrap per test binary, and the run
// says once that it falls back; TestLeak still fails with its line.
func TestEngineNoticeOnceForGoTest(t *testing.T) {
	sandbox.Require(t)
	b := lab.Programs(t)
	ctx, cancel := context.WithTimeout(context.Background(), harness.Timeout)
	defer cancel()
	argv := lab.UnderParent(b, "bind,listen", "", b.Plain, "--", "go", "test", "-count=1", "./clean/", "./leaky/")
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = runmod.Dir(t), runmod.Env() // no NETTRAP_ variables
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	code := harness.ExitCode(cmd.Run())
	out := stdout.String() + stderr.String()
	if n := lab.NoticeCount(out); n != 1 || code != 1 {
		t.Errorf("exit %d, %d fallback notices; want 1 (TestLeak failed) and 1\n%s", code, n, out)
	}
	if !strings.Contains(stdout.String(), "Outbound network blocked: connect tcp 203.0.113.7:443 (external) during TestLeak") {
		t.Errorf("no denial line under TestLeak:\n%s", out)
	}
}
