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
	root := os.Getenv("GITHUB_WORKSPACE")
	if root == "" {
		root, _ = os.Getwd()
	}
	return annotate(w, s, root)
}

// annotate is Annotate with the workspace's root.
func annotate(w io.Writer, s *report.Summary, root string) error {
	var rows []report.Row
	rows = append(rows, s.Blocked...)
	rows = append(rows, s.Collection...)
	rows = append(rows, s.BadMarkers...)
	rows = append(rows, s.Errors...)
	var b bytes.Buffer
	for i, r := range rows {
		if i == MaxAnnotations {
			fmt.Fprintf(&b, "nettrap: %d more blocked attempts not annotated (GitHub shows at most %d per step); see the step summary or `nettrap report` on the audit log\n",
				len(rows)-MaxAnnotations, MaxAnnotations)
			break
		}
		title := "nettrap: " + strings.TrimSpace(r.Package+" "+r.Who())
		b.WriteString("::error ")
		if file := workspaceFile(r, root); file != "" {
			fmt.Fprintf(&b, "file=%s,line=%d,", escapeProperty(file), r.Line)
		}
		fmt.Fprintf(&b, "title=%s::%s\n", escapeProperty(title), escapeData(message(r)))
	}
	_, err := w.Write(b.Bytes())
	return err
}

// message is the annotation's text for a row.
func message(r report.Row) string {
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
	if r.Where != "" {
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

// workspaceFile is the file of a row's attempts relative to root, for
// file=: from the file's path as the binary names it when that is under
// root, else the file relative to the module's root (a -trimpath build:
// right when the module is the workspace's root). "" when the row does
// not know where.
func workspaceFile(r report.Row, root string) string {
	if r.File == "" || r.Line == 0 {
		return ""
	}
	if filepath.IsAbs(r.Path) && root != "" {
		if rel, err := filepath.Rel(root, r.Path); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return filepath.ToSlash(rel)
		}
	}
	if filepath.IsAbs(r.File) {
		return ""
	}
	return r.File
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
