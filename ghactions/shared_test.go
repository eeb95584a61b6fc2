package ghactions

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/nettrap/nettrap/audit"
	"github.com/nettrap/nettrap/report"
)

// packageDenials are n denials of tests of package pkg.
func packageDenials(pkg string, n int) *report.Summary {
	var recs []audit.Record
	for i := range n {
		recs = append(recs, audit.Record{Schema: 1, RunID: "r-" + pkg, Package: pkg, Test: fmt.Sprintf("TestLeak%d", i),
			Syscall: "connect", SockType: "tcp", Dest: "203.0.113.7:443", Class: "external", Decision: audit.Denied})
	}
	s := report.Build(recs, "")
	s.Scope = pkg
	return s
}

// TestReportSharedParallel: four packages' nettraps report at once, as
// under go test -exec. Their annotations share GitHub's ten, none is
// written twice, each says how many of its own were left out, and the
// step summary gets one whole block per package with findings (none for
// the clean one), after what was there.
func TestReportSharedParallel(t *testing.T) {
	dir := t.TempDir()
	state, summary := filepath.Join(dir, "state"), filepath.Join(dir, "summary.md")
	if err := os.WriteFile(summary, []byte("# earlier step\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pkgs := []string{"example.com/m/a", "example.com/m/b", "example.com/m/c", "example.com/m/d"}
	outs := make([]bytes.Buffer, len(pkgs)+1)
	var wg sync.WaitGroup
	for i, pkg := range pkgs {
		wg.Go(func() {
			if err := ReportShared(&outs[i], packageDenials(pkg, 4), state, summary); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Go(func() {
		if err := ReportShared(&outs[len(pkgs)], packageDenials("example.com/m/clean", 0), state, summary); err != nil {
			t.Error(err)
		}
	})
	wg.Wait()

	seen := map[string]bool{}
	annotated, left := 0, 0
	for i := range outs {
		for line := range strings.Lines(outs[i].String()) {
			switch {
			case strings.HasPrefix(line, "::error "):
				if seen[line] {
					t.Errorf("annotation written twice: %q", line)
				}
				seen[line] = true
				annotated++
			default:
				var n int
				if _, err := fmt.Sscanf(line, "nettrap: %d more blocked attempts of "+pkgs[min(i, len(pkgs)-1)], &n); err != nil {
					t.Errorf("package %d: line %q", i, line)
				}
				left += n
			}
		}
	}
	if annotated != MaxAnnotations || left != 16-MaxAnnotations {
		t.Errorf("%d annotations and %d said left out, want %d and %d", annotated, left, MaxAnnotations, 16-MaxAnnotations)
	}
	b, err := os.ReadFile(summary)
	if err != nil {
		t.Fatal(err)
	}
	md := string(b)
	if !strings.HasPrefix(md, "# earlier step\n### nettrap: ") || strings.Contains(md, "example.com/m/clean") {
		t.Errorf("step summary:\n%s", md)
	}
	blocks := strings.Split(strings.TrimPrefix(md, "# earlier step\n"), "### nettrap: ")[1:]
	if len(blocks) != len(pkgs) {
		t.Fatalf("%d blocks, want one per package with findings:\n%s", len(blocks), md)
	}
	for _, block := range blocks {
		pkg, _, _ := strings.Cut(block, "\n")
		pkg = strings.ReplaceAll(pkg, `\`, "")
		if n := strings.Count(block, "| `"+pkg+"` |"); n != 4 || strings.Count(block, "| `example.com/m/") != 4 {
			t.Errorf("block of %s has %d rows of its own, want its 4 alone:\n%s", pkg, n, block)
		}
	}
}

// A second report of what was annotated already writes nothing again.
func TestReportSharedNoRepeat(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	var first, second bytes.Buffer
	s := packageDenials("example.com/m/a", 2)
	if err := ReportShared(&first, s, state, ""); err != nil {
		t.Fatal(err)
	}
	if err := ReportShared(&second, s, state, ""); err != nil {
		t.Fatal(err)
	}
	if strings.Count(first.String(), "::error ") != 2 || second.Len() != 0 {
		t.Errorf("first report:\n%s\nsecond:\n%s", first.String(), second.String())
	}
}
