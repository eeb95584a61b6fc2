package ghactions

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/nettrap/nettrap/audit"
	"github.com/nettrap/nettrap/report"
)

const (
	// MaxAnnotations is how many error annotations GitHub shows per step.
	MaxAnnotations = 10
	// MaxStepSummary is GitHub's limit on a step summary file.
	MaxStepSummary = 1 << 20
)

// Enabled reports whether we run in GitHub Actions.
func Enabled(getenv func(string) string) bool { return getenv("GITHUB_ACTIONS") == "true" }

// Annotate writes one ::error command per blocked row (attempts at
// collection time included), bad marker and nettrap error, at most
// MaxAnnotations, then a plain line saying how many more there are. A
// row that knows where its attempts were made (the caller's stack) gets
// file= and line=, relative to the workspace (GITHUB_WORKSPACE, else
// the working directory), so that GitHub attaches it to the diff.
func Annotate(w io.Writer, s *report.Summary) error {
	return annotate(w, s, workspaceRoot())
}

// annotate is Annotate with the workspace's root.
func annotate(w io.Writer, s *report.Summary, root string) error {
	all := annotations(s, root)
	var b bytes.Buffer
	for _, a := range all[:min(len(all), MaxAnnotations)] {
		b.WriteString(a)
	}
	if n := len(all) - MaxAnnotations; n > 0 {
		b.WriteString(moreLine(n, ""))
	}
	_, err := w.Write(b.Bytes())
	return err
}

// moreLine says that n annotations were left out (of package pkg, when
// several nettraps share the step's annotations).
func moreLine(n int, pkg string) string {
	of := ""
	if pkg != "" {
		of = " of " + pkg
	}
	return fmt.Sprintf("nettrap: %d more blocked attempts%s not annotated (GitHub shows at most %d per step); see the step summary or `nettrap report` on the audit log\n",
		n, of, MaxAnnotations)
}

// annotations are the ::error commands of a summary, one a line, in
// its order: blocked attempts, at collection time, bad markers,
// nettrap's errors.
func annotations(s *report.Summary, root string) []string {
	var rows []report.Row
	rows = append(rows, s.Blocked...)
	rows = append(rows, s.Collection...)
	rows = append(rows, s.BadMarkers...)
	rows = append(rows, s.Errors...)
	out := make([]string, 0, len(rows))
	for _, r := range rows {
		title := "nettrap: " + strings.TrimSpace(r.Package+" "+r.Who())
		var b strings.Builder
		b.WriteString("::error ")
		file, line, onTest := place(r, root)
		if file != "" {
			fmt.Fprintf(&b, "file=%s,line=%d,", escapeProperty(file), line)
		}
		fmt.Fprintf(&b, "title=%s::%s\n", escapeProperty(title), escapeData(message(r, onTest)))
		out = append(out, b.String())
	}
	return out
}

// place is where a row's annotation goes: the test's own line when the
// attempts were made in a helper (the called-from frame,
// audit.Origin.CalledFrom; onTest), else the line they were made on.
//
// Why the test's line, with the helper's named in the text: GitHub lists
// annotations under the line they name, in a pull request's files and
// on the run's page. A helper many tests call (a client, a fixture)
// would collect every test's annotation on its one line, where they
// cannot be told apart, on code the change under review often does not
// touch; the test's line is one per test, and the missing mock usually
// goes there. One annotation per finding rather than a second one on
// the helper's line: GitHub shows only MaxAnnotations per step.
func place(r report.Row, root string) (file string, line int, onTest bool) {
	if r.CalledLine > 0 {
		if f := workspaceFile(r.CalledFile, r.CalledLine, r.CalledPath, root); f != "" {
			return f, r.CalledLine, true
		}
	}
	return workspaceFile(r.File, r.Line, r.Path, root), r.Line, false
}

// message is the annotation's text for a row; onTest: the annotation
// is on the test's line that called the helper r.Where names.
func message(r report.Row, onTest bool) string {
	switch r.Decision {
	case audit.NettrapError:
		return "nettrap could not supervise " + r.Package + ": " + r.Reason
	case audit.BadMarker:
		return fmt.Sprintf("%s of package %s fails: %s", r.Test, r.Package, r.Reason)
	}
	var b strings.Builder
	// A query nettrap's sinkhole read (report.rowOf) names the lookup.
	lookup, ok := strings.CutPrefix(r.Operation, report.DNSLookup)
	if !ok {
		lookup = ""
	}
	b.WriteString(audit.Blocked(r.Decision, lookup, r.Operation, r.Dest, r.Class))
	if lookup == "" && r.Dest == "" && r.Reason != "" {
		b.WriteString(" (" + r.Reason + ")")
	}
	switch {
	case r.StartedBy != "" && r.Test == audit.Collection:
		b.WriteString(" from a goroutine of " + r.StartedBy + ", at collection time")
	case r.StartedBy != "":
		b.WriteString(" from a goroutine of " + r.StartedBy + ", during " + r.Running())
	case r.Unowned:
		b.WriteString(" during " + r.Running() + ", in a goroutine no running test is known to have started")
	case r.Test == audit.Collection:
		b.WriteString(audit.AtCollection)
	case r.Test == "" && r.Process != "":
		b.WriteString(" by " + r.Who())
	default:
		// The test that was running (the stack, when read, named no
		// other).
		b.WriteString(" during " + r.Who())
	}
	switch {
	case onTest && r.StartedBy != "" && strings.HasSuffix(r.Where, ")"):
		// The test's line is where it started the goroutine (its
		// creators say so), not a call on the way to where.
		b.WriteString(" at " + strings.TrimSuffix(r.Where, ")") + ", in a goroutine started from this line)")
	case onTest && strings.HasSuffix(r.Where, ")"):
		// "at prices/client.go:31 (prices.fetchQuote, called from this
		// line)", as the test's output says "called from FILE:LINE".
		b.WriteString(" at " + strings.TrimSuffix(r.Where, ")") + ", called from this line)")
	case r.Where != "":
		b.WriteString(" at " + r.Where)
	}
	if r.Package != "" {
		b.WriteString(" of package " + r.Package)
	}
	switch {
	case r.Queries > 1:
		// One lookup, one annotation: its queries (A, AAAA, at each
		// nameserver) are counted, not annotated one by one.
		fmt.Fprintf(&b, " (%d queries via %s)", r.Queries, r.Dest)
	case r.Count > 1:
		fmt.Fprintf(&b, ", %d times", r.Count)
	}
	return b.String()
}

// workspaceFile is a frame's file relative to root, for file=: from
// path, the file as the binary names it, when that is under root, else
// file, relative to the module's root (a -trimpath build: right when
// the module is the workspace's root). "" when the row does not know
// where.
func workspaceFile(file string, line int, path, root string) string {
	if file == "" || line == 0 {
		return ""
	}
	if filepath.IsAbs(path) && root != "" {
		if rel, err := filepath.Rel(root, path); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return filepath.ToSlash(rel)
		}
	}
	if filepath.IsAbs(file) {
		return ""
	}
	return file
}

// escapeData escapes a workflow command's message as the runner expects.
func escapeData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

// escapeProperty escapes a workflow command's property value.
func escapeProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}

// rowBounds are the table sizes tried, largest first, to keep the step
// summary under the limit.
var rowBounds = []int{0, 200, 50, 10, 1}

// AppendStepSummary appends s as Markdown to the step summary file at
// path, keeping the file under MaxStepSummary: tables are cut short (with
// a line saying how many rows are left out) when the whole would not fit.
func AppendStepSummary(path string, s *report.Summary) error {
	used := int64(0)
	if st, err := os.Stat(path); err == nil {
		used = st.Size()
	}
	budget := MaxStepSummary - used - 1
	var md []byte
	for _, n := range rowBounds {
		var b bytes.Buffer
		if err := s.Markdown(&b, n); err != nil {
			return err
		}
		md = b.Bytes()
		if int64(len(md)) <= budget {
			break
		}
	}
	if int64(len(md)) > budget {
		return fmt.Errorf("step summary %s: no room left for the nettrap summary (%d of %d bytes used)", path, used, MaxStepSummary)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("step summary: %w", err)
	}
	if _, err := f.Write(md); err != nil {
		f.Close()
		return fmt.Errorf("step summary: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("step summary: %w", err)
	}
	return nil
}
