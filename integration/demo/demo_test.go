package demo

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nettrap/nettrap/integration/internal/sandbox"
	"github.com/nettrap/nettrap/integration/internal/victimbuild"
)

func TestMain(m *testing.M) {
	sandbox.Main(m, victimbuild.Cleanup)
}

// runGuard only stops a hung demo; it is not an assertion about speed.
const runGuard = 5 * time.Minute

func TestDemo(t *testing.T) {
	sandbox.Require(t)
	for _, tool := range []string{"unshare", "ip", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			require(t, "scripts/demo.sh needs "+tool+": "+err.Error())
		}
	}
	out, code := runDemo(t, victimbuild.Nettrap(t))
	if code != 1 {
		t.Fatalf("demo.sh: exit %d, want 1 (one test forgot its mock)\n%s", code, out)
	}
	for _, want := range []string{
		"--- PASS: TestForecast ",
		"--- PASS: TestForecastUnavailable ",
		"nettrap: Outbound network blocked: connect tcp 203.0.113.80:80 (external) during TestForecastBergen",
		"--- FAIL: TestForecastBergen ",
		"=== ATTR  TestLiveForecast nettrap network",
		"--- PASS: TestLiveForecast ",
		"FAIL\tgithub.com/nettrap/nettrap/examples/weather",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q", want)
		}
	}
	// The fake API must have seen the live test, and only it: the blocked
	// test's request (city=Bergen) never left its process.
	got := fakeRequests(out)
	if len(got) != 1 || !strings.HasPrefix(got[0], "GET /v1/forecast?city=Oslo ") {
		t.Errorf("the fake API received %q, want exactly the live test's GET /v1/forecast?city=Oslo", got)
	}
	if t.Failed() {
		t.Logf("demo output:\n%s", out)
	}
}

func runDemo(t *testing.T, nettrap string) (string, int) {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), runGuard)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(root, "scripts", "demo.sh"), "-v")
	cmd.Env = append(os.Environ(), "DEMO_NETTRAP="+nettrap, "GOPROXY=off", "GOTOOLCHAIN=local")
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err = cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return buf.String(), 0
	case errors.As(err, &ee) && ee.ExitCode() >= 0:
		return buf.String(), ee.ExitCode()
	}
	t.Fatalf("demo.sh: %v\n%s", err, buf.String())
	return "", -1
}

// fakeRequests returns the lines demo.sh prints from the fake API's log.
func fakeRequests(out string) []string {
	_, after, ok := strings.Cut(out, "The fake API at 203.0.113.80 received:\n")
	if !ok {
		return nil
	}
	var reqs []string
	for line := range strings.SplitSeq(after, "\n") {
		if strings.HasPrefix(line, "  ") {
			reqs = append(reqs, strings.TrimSpace(line))
		}
	}
	return reqs
}

// require skips t with reason, or fails it when CI=true.
func require(t *testing.T, reason string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s (CI=true, so this is fatal)", reason)
	}
	t.Skip(reason)
}
