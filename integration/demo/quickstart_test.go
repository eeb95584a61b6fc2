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

	"github.com/nettrap/nettrap/integration/internal/fakehost"
	"github.com/nettrap/nettrap/integration/internal/lab"
	"github.com/nettrap/nettrap/integration/internal/sandbox"
	"github.com/nettrap/nettrap/integration/internal/victimbuild"
)

// quickDest is where the quick start's new module dials: a documentation
// address the fake host serves inside the sandbox.
var quickDest = fakehost.TCP("203.0.113.7:443")

// quickTest is a new user's first test file, TestAdd pure; quickFetch
// adds TestFetch, which forgot its mock and swallows the error.
const quickTest = `package quick

import "testing"

func TestAdd(t *testing.T) {
	if 1+1 != 2 {
		t.Fatal("math")
	}
}
`

const quickFetch = `package quick

import (
	"net"
	"testing"
)

func TestFetch(t *testing.T) {
	%MARK%c, err := net.Dial("tcp", "203.0.113.7:443")
	if err == nil {
		c.Write([]byte("quick start"))
		c.Close()
	}
	t.Log("fetch:", err)
}
`

// TestQuickStart follows the README's quick start word for word on a new
// module, inside the sandbox: its commands run as written (nettrap found
// on PATH), and what they print is what the README says they print.
func TestQuickStart(t *testing.T) {
	sandbox.Require(t)
	h := fakehost.Start(t, quickDest)
	q := newQuickModule(t, victimbuild.Nettrap(t))
	quick := readmeCode(t, "## Quick start on your own project")

	// 1. A clean suite: the go command's output, and one nettrap line.
	out, stderr, code := q.run(t, quick)
	claimed := readmeLine(t, `nettrap: no outbound network attempt blocked \(run [0-9a-f]{16}\)`)
	if code != 0 || !strings.Contains(out, "ok  \texample.com/quick") || strings.TrimSpace(normalize(stderr)) != normalize(claimed) {
		t.Errorf("%q on a clean suite: exit %d, stderr %q; want 0, ok, and only the README's %q\nstdout: %s", quick, code, stderr, claimed, out)
	}

	// 2. A forgotten mock: the failure reads as the README's does.
	q.write(t, strings.ReplaceAll(quickFetch, "%MARK%", ""))
	mark := h.Mark()
	out, stderr, code = q.run(t, quick)
	for _, want := range []string{
		"--- FAIL: TestFetch",
		"    nettrap: Outbound network blocked: connect tcp 203.0.113.7:443 (external) during TestFetch",
		"FAIL\texample.com/quick",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the failure lacks %q (the README's shape):\n%s", want, out)
		}
	}
	if code != 1 || !strings.Contains(stderr, "nettrap: 1 outbound network attempt blocked in 1 package") {
		t.Errorf("exit %d, summary %q; want 1 and the README's headline", code, stderr)
	}
	if got, err := h.Arrived(mark, quickDest, 30*time.Second); err != nil || len(got) != 0 {
		t.Errorf("the blocked connect reached the fake host: %v %v", got, err)
	}

	// 3. The marker lets the test through, audited: the README's, and
	// t.Attr, which it names for a go line of 1.25 (the module's).
	for _, marker := range []string{readmeMarker(t), `t.Attr("nettrap", "network")`} {
		q.write(t, strings.ReplaceAll(quickFetch, "%MARK%", marker+"\n\t"))
		mark = h.Mark()
		if out, stderr, code = q.run(t, quick); code != 0 || !strings.Contains(stderr, "1 allowed by marker or --allow") {
			t.Errorf("marked with %s: exit %d, stderr %q; want 0 and the allowed count\n%s", marker, code, stderr, out)
		}
		if got, err := h.Arrived(mark, quickDest, 30*time.Second); err != nil || len(got) != 1 {
			t.Errorf("the connect of the test marked with %s: arrived %v (%v), want once", marker, got, err)
		}
	}

	// 4. --allow, as the README writes it, for an address the test does
	// not use: the forgotten mock is still blocked; then nettrap report
	// on the log the summary names prints the summary again.
	q.write(t, strings.ReplaceAll(quickFetch, "%MARK%", ""))
	allow := readmeCode(t, "### `--allow`")
	cmd, _, _ := strings.Cut(allow, "#")
	out, stderr, code = q.run(t, strings.TrimSpace(cmd))
	if code != 1 || !strings.Contains(out, "during TestFetch") {
		t.Errorf("%q: exit %d, want 1 with TestFetch blocked\n%s%s", cmd, code, out, stderr)
	}
	log := regexp.MustCompile(`audit log (\S+)\)`).FindStringSubmatch(stderr)
	if log == nil {
		t.Fatalf("the summary names no audit log:\n%s", stderr)
	}
	// It exits 1: the log holds a blocked attempt.
	rep, _, code := q.run(t, "nettrap report "+log[1])
	if code != 1 || !strings.Contains(rep, "TestFetch") || !strings.Contains(rep, "203.0.113.7:443") {
		t.Errorf("nettrap report %s: exit %d, want 1\n%s", log[1], code, rep)
	}
	os.RemoveAll(filepath.Dir(log[1]))
}

// quickModule is a new module in a temporary directory, with nettrap on
// PATH as a user who installed it has it.
type quickModule struct {
	dir, bin string
	env      []string
}

func newQuickModule(t *testing.T, nettrap string) quickModule {
	t.Helper()
	dir, bin := t.TempDir(), t.TempDir()
	if err := os.Symlink(nettrap, filepath.Join(bin, "nettrap")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/quick\n\ngo 1.25\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "GOPROXY=off", "GOTOOLCHAIN=local", "GOFLAGS=-count=1")
	if err := os.WriteFile(filepath.Join(dir, "quick_test.go"), []byte(quickTest), 0o644); err != nil {
		t.Fatal(err)
	}
	return quickModule{dir: dir, bin: bin, env: env}
}

// write makes the second test file, fetch_test.go.
func (q quickModule) write(t *testing.T, src string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(q.dir, "fetch_test.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
}

// run runs a command line as the README writes it (words split on
// spaces; no quoting in these).
func (q quickModule) run(t *testing.T, line string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runGuard)
	defer cancel()
	words := strings.Fields(line)
	cmd := exec.CommandContext(ctx, words[0], words[1:]...)
	if words[0] == "nettrap" {
		// As the user's shell finds it on PATH (exec.Command looked in
		// this process's PATH, not cmd.Env's).
		cmd.Path, cmd.Err = filepath.Join(q.bin, "nettrap"), nil
	}
	cmd.Dir, cmd.Env = q.dir, q.env
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ee.ExitCode() >= 0:
		code = ee.ExitCode()
	default:
		t.Fatalf("%q: %v\n%s%s", line, err, o.String(), e.String())
	}
	// Under an outer nettrap, nettrap's notice of its fallback to the
	// ptrace engine (its listener is above) is no part of the quick start.
	return lab.DropNotice(o.String()), lab.DropNotice(e.String()), code
}

// readmeLine is the README's text matching pattern (in backquotes there).
func readmeLine(t *testing.T, pattern string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(pattern).Find(bytes.ReplaceAll(b, []byte("\n"), []byte(" ")))
	if m == nil {
		t.Fatalf("README.md has nothing matching %q", pattern)
	}
	return string(m)
}

// readmeCode is the first fenced code block (any language) under the
// README's heading, without its fences.
// readmeMarker is the marker line of the README's code block under "###
// The marker", its comment left out.
func readmeMarker(t *testing.T) string {
	t.Helper()
	for line := range strings.SplitSeq(readmeCode(t, "### The marker"), "\n") {
		if strings.Contains(line, "nettrap") {
			line, _, _ = strings.Cut(line, "//")
			return strings.TrimSpace(line)
		}
	}
	t.Fatal("README.md's marker block has no marker")
	return ""
}

func readmeCode(t *testing.T, heading string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("README.md has no heading %q", heading)
	}
	var block []string
	in := false
	for line := range strings.SplitSeq(after, "\n") {
		switch {
		case strings.HasPrefix(line, "```") && in:
			return strings.Join(block, "\n")
		case strings.HasPrefix(line, "```"):
			in = true
		case in:
			block = append(block, line)
		}
	}
	t.Fatalf("README.md has no code block under %q", heading)
	return ""
}
