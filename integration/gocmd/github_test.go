package gocmd

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/nettrap/nettrap/integration/internal/fakehost"
	"github.com/nettrap/nettrap/integration/internal/harness"
	"github.com/nettrap/nettrap/integration/internal/lab"
	"github.com/nettrap/nettrap/integration/internal/sandbox"
)

var updateGitHub = flag.Bool("update-github", false, "rewrite testdata/github-exec.golden")

// TestGitHubActionsExec: go test -exec nettrap on GitHub Actions, its
// test binaries (one nettrap each) running at once (-p=4). Each nettrap
// annotates its own package's findings on the go command's stderr, at
// the start of a line (stdout stays test2json, with no ::error in any
// event), and appends a block of the step summary for its package if it
// has findings. The annotations (file, line, title) and the step
// summary's blocks, in order, are testdata/github-exec.golden (run ids
// left out). Then with one package more, past GitHub's ten: ten
// annotations in all, none twice, and one line saying one was left out.
func TestGitHubActionsExec(t *testing.T) {
	sandbox.Require(t)
	root := fixtureRoot(t)
	h := fakehost.Start(t, append(whereEndpoints(), streamEndpoints()...)...)
	mark := h.Mark()
	got, stderr := githubExecRun(t, "-json", "./where", "./leftover", "./clean")
	checkArrivals(t, h, mark, append(whereEndpoints(), streamEndpoints()...), nil)
	golden := filepath.Join(root, "github-exec.golden")
	matchGolden(t, golden, got, *updateGitHub, "update-github", "annotations and step summary", "\ngo's stderr:\n"+stderr)

	// where's 8, leftover's 2 and initleak's 1: one too many.
	_, stderr = githubExecRun(t, "", "./where", "./leftover", "./initleak")
	notes := harness.LinesWithPrefix(stderr, "::error ")
	more := regexp.MustCompile(`(?m)^nettrap: 1 more blocked attempts of example\.com/fixtures/(where|leftover|initleak) not annotated \(GitHub shows at most 10 per step\)`)
	if len(notes) != 10 || len(slices.Compact(slices.Sorted(slices.Values(notes)))) != 10 || len(more.FindAllString(stderr, -1)) != 1 {
		t.Errorf("want 10 distinct annotations and one line for the 11th; go's stderr:\n%s", stderr)
	}
}

// githubExecRun runs go test -exec nettrap (with goFlag, if any) on pkgs
// in the fixture module as on GitHub Actions, and returns its
// annotations' file=, line= and title= (sorted) and the step summary,
// blocks sorted, run ids left out; and the go command's stderr.
func githubExecRun(t *testing.T, goFlag string, pkgs ...string) (got, stderr string) {
	t.Helper()
	root := fixtureRoot(t)
	summary := filepath.Join(t.TempDir(), "summary.md")
	if err := os.WriteFile(summary, []byte("# earlier step\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := harness.GoEnv("GITHUB_ACTIONS=true", "GITHUB_WORKSPACE="+root, "GITHUB_STEP_SUMMARY="+summary)
	args := []string{"test", "-count=1", "-p=4", "-exec", harness.Nettrap(t)}
	if goFlag != "" {
		args = append(args, goFlag)
	}
	run := harness.RunIn(t, root, env, "go", append(args, pkgs...)...)
	if run.Code != 1 {
		t.Errorf("go test exit %d, want 1\nstderr:\n%s", run.Code, run.Stderr)
	}
	if goFlag == "-json" {
		for _, e := range decodeJSON(t, lab.DropNotice(run.Stdout)) {
			if strings.Contains(e.Output, "::error") {
				t.Errorf("an annotation in the test output: %+v", e)
			}
		}
	}
	var b strings.Builder
	b.WriteString("# annotations: file= and line= and title= of each (GITHUB_WORKSPACE is the fixture module)\n")
	var notes []string
	for _, l := range harness.LinesWithPrefix(run.Stderr, "::error ") {
		props, _, _ := strings.Cut(strings.TrimPrefix(l, "::error "), "::")
		notes = append(notes, props)
	}
	slices.Sort(notes)
	for _, n := range notes {
		b.WriteString(n + "\n")
	}
	b.WriteString("\n# step summary: one block per package with findings (sorted here)\n")
	md, err := os.ReadFile(summary)
	if err != nil {
		t.Fatal(err)
	}
	earlier, blocks, _ := strings.Cut(string(md), "### ")
	b.WriteString(earlier)
	var parts []string
	for _, p := range strings.Split(blocks, "\n### ") {
		parts = append(parts, "### "+strings.TrimSuffix(p, "\n")+"\n")
	}
	slices.Sort(parts)
	runID := regexp.MustCompile(`\(run [0-9a-f]+\)`)
	for _, p := range parts {
		b.WriteString(runID.ReplaceAllString(p, "(run R)"))
	}
	return b.String(), run.Stderr
}

// TestGitHubActionsTestBinary: nettrap -- ./pkg.test on GitHub Actions,
// with no go command above it, annotates its findings on its own stderr
// and appends its package's block to the step summary.
func TestGitHubActionsTestBinary(t *testing.T) {
	sandbox.Require(t)
	bins := buildFixtures(t, "leftover")
	root := fixtureRoot(t)
	summary := filepath.Join(t.TempDir(), "summary.md")
	env := harness.GoEnv("GITHUB_ACTIONS=true", "GITHUB_WORKSPACE="+root, "GITHUB_STEP_SUMMARY="+summary)
	run := harness.RunIn(t, filepath.Join(root, "leftover"), env, harness.Nettrap(t), filepath.Join(bins, "leftover.test"))
	if run.Code != 1 {
		t.Errorf("exit %d, want 1\n%s", run.Code, run.Stderr)
	}
	notes := harness.LinesWithPrefix(run.Stderr, "::error ")
	if len(notes) != 2 || !strings.HasPrefix(notes[0], "::error file=leftover/leftover_test.go,line=19,") ||
		!strings.Contains(notes[0], "from a goroutine of TestA, during TestB at fx/fx.go:68 (fx.Dial, in a goroutine started from this line)") ||
		!strings.Contains(notes[1], "TestOdd") {
		t.Errorf("annotations %q, want leftover's attempt on the line of TestA that started its goroutine, and TestOdd's bad marker\n%s", notes, run.Stderr)
	}
	md, err := os.ReadFile(summary)
	if err != nil || !strings.HasPrefix(string(md), "### nettrap: example.com/fixtures/leftover\n") {
		t.Errorf("step summary: %v\n%s", err, md)
	}
}
