package demo

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nettrap/nettrap/integration/internal/lab"
	"github.com/nettrap/nettrap/integration/internal/sandbox"
	"github.com/nettrap/nettrap/integration/internal/victimbuild"
)

func TestMain(m *testing.M) {
	// Under an outer nettrap (nettrap's own suite under nettrap) the
	// nettraps these tests start confine on their own, under its listener.
	lab.DropOuterNettrapEnv()
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
	// Nothing is guessed from timing: the summary blames only
	// TestForecastBergen (its row), with no hint at another test.
	if strings.Contains(out, "hint:") || strings.Contains(out, "TestForecastUnavailable may") {
		t.Errorf("the demo's summary guesses from timing:\n%s", out)
	}
	// The fake API must have seen the live test, and only it: the blocked
	// test's request (city=Bergen) never left its process.
	got := fakeRequests(out)
	if len(got) != 1 || !strings.HasPrefix(got[0], "GET /v1/forecast?city=Oslo ") {
		t.Errorf("the fake API received %q, want exactly the live test's GET /v1/forecast?city=Oslo", got)
	}
	// The README's quick start shows this run: its failure and its summary
	// must be what the demo prints.
	for _, block := range readmeBlocks(t, "### Reading a failure", "### The summary and `nettrap report`") {
		for line := range strings.SplitSeq(block, "\n") {
			if !strings.Contains(normalize(out), normalize(line)) {
				t.Errorf("the README shows %q, which the demo does not print", line)
			}
		}
	}
	if t.Failed() {
		t.Logf("demo output:\n%s", out)
	}
}

// readmeBlocks returns the first fenced code block under each of the
// README's headings.
func readmeBlocks(t *testing.T, headings ...string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	var blocks []string
	for _, h := range headings {
		_, after, ok := strings.Cut(readme, "\n"+h+"\n")
		if !ok {
			t.Fatalf("README.md has no heading %q", h)
		}
		_, after, ok = strings.Cut(after, "\n```\n")
		block, _, ok2 := strings.Cut(after, "\n```\n")
		if !ok || !ok2 {
			t.Fatalf("README.md has no code block under %q", h)
		}
		blocks = append(blocks, block)
	}
	return blocks
}

// variable is what differs from one demo run to the next: durations, the
// run id and the audit log's path.
var variable = regexp.MustCompile(`\(\d+\.\d+s\)|\t\d+\.\d+s|run [0-9a-f]{16}|audit log [^)\n]*`)

func normalize(s string) string { return variable.ReplaceAllString(s, "X") }

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
		return lab.DropNotice(buf.String()), 0
	case errors.As(err, &ee) && ee.ExitCode() >= 0:
		return lab.DropNotice(buf.String()), ee.ExitCode()
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
