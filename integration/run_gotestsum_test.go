package integration

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/nettrap/nettrap/integration/internal/victimbuild"
)

// gotestsum finds gotestsum on PATH (.ci/run installs it from the Go
// module proxy); without it the test skips, or fails when CI=true.
func gotestsum(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("gotestsum")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("gotestsum not on PATH (CI=true, so this is fatal): %v; install: go install gotest.tools/gotestsum@v1.13.0", err)
		}
		t.Skipf("gotestsum not on PATH: %v; install: go install gotest.tools/gotestsum@v1.13.0", err)
	}
	return p
}

// TestGotestsum: both documented ways to use nettrap with gotestsum report
// the test nettrap failed and exit 1.
func TestGotestsum(t *testing.T) {
	gts := gotestsum(t)
	nettrap := victimbuild.Nettrap(t)
	for name, args := range map[string][]string{
		"exec":        {"--format=standard-verbose", "--", "-count=1", "-exec", nettrap, "./leaky/"},
		"raw-command": {"--format=standard-verbose", "--raw-command", "--", nettrap, "--", "go", "test", "-json", "-count=1", "./leaky/"},
	} {
		t.Run(name, func(t *testing.T) {
			run := runModIn(t, runModEnv("NETTRAP_AUDIT_LOG="+auditPath(t)), gts, args...)
			out := run.stdout + run.stderr
			if run.code != 1 {
				t.Errorf("gotestsum exit %d, want 1\n%s", run.code, out)
			}
			if !strings.Contains(out, "--- FAIL: TestLeak") || !strings.Contains(out, "Outbound network blocked: connect tcp 203.0.113.7:443 (external) during TestLeak") {
				t.Errorf("gotestsum output lacks TestLeak's failure and nettrap's line:\n%s", out)
			}
			if !strings.Contains(out, "--- PASS: TestFine") {
				t.Errorf("gotestsum output lacks the passing test:\n%s", out)
			}
		})
	}
}
