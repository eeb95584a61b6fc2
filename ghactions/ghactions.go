package ghactions

import (
	"bytes"
	"fmt"
	"io"
	"os"
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
// MaxAnnotations, then a plain line saying how many more there are.
func Annotate(w io.Writer, s *report.Summary) error {
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
		fmt.Fprintf(&b, "::error title=%s::%s\n", escapeProperty(title), escapeData(message(r)))
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
	case r.Test == audit.Collection:
		b.WriteString(audit.AtCollection)
	case r.Test == "" && r.Process != "":
		b.WriteString(" by " + r.Who())
	default:
		// What nettrap knows: the test that was running, not whose code
		// made the call.
		b.WriteString(" during " + r.Who())
	}
	if r.Package != "" {
		b.WriteString(" of package " + r.Package)
	}
	if r.Count > 1 {
		fmt.Fprintf(&b, ", %d times", r.Count)
	}
	for _, h := range report.Hints([]report.Row{r}) {
		b.WriteString(". " + h)
	}
	return b.String()
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
