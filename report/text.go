package report

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// Headline is the summary's first line; for a clean run, the only one.
func (s *Summary) Headline() string {
	t := s.Totals
	var b strings.Builder
	b.WriteString("nettrap: ")
	switch {
	case t.Blocked+t.Collection > 0:
		fmt.Fprintf(&b, "%s blocked in %s", plural(t.Blocked+t.Collection, "outbound network attempt"), plural(t.BlockedPackages, "package"))
	case t.WouldBlock > 0:
		fmt.Fprintf(&b, "audit mode: %s would have been blocked", plural(t.WouldBlock, "outbound network attempt"))
	case t.Stale+t.BadMarkers+t.UnusedRules+t.Errors > 0:
		b.WriteString("no outbound network attempt blocked, but see below")
	default:
		b.WriteString("no outbound network attempt blocked")
		var allowed []string
		if n := t.Allowed - t.OwnNetns - t.Toolchain; n > 0 {
			allowed = append(allowed, fmt.Sprintf("%d allowed by marker or --allow", n))
		}
		if t.Toolchain > 0 {
			allowed = append(allowed, fmt.Sprintf("%d the go command's own", t.Toolchain))
		}
		if t.OwnNetns > 0 {
			allowed = append(allowed, fmt.Sprintf("%d allowed in network namespaces the tests made", t.OwnNetns))
		}
		if len(allowed) > 0 {
			fmt.Fprintf(&b, " (%s)", strings.Join(allowed, ", "))
		}
	}
	if src := s.source(); src != "" {
		b.WriteString(" (" + src + ")")
	}
	return b.String()
}

func (s *Summary) source() string {
	var parts []string
	if len(s.RunIDs) == 1 {
		parts = append(parts, "run "+s.RunIDs[0])
	} else if len(s.RunIDs) > 1 {
		parts = append(parts, fmt.Sprintf("%d runs", len(s.RunIDs)))
	}
	if len(s.Logs) > 0 {
		parts = append(parts, "audit log "+strings.Join(s.Logs, ", "))
	}
	return strings.Join(parts, "; ")
}

// TotalsLine is the summary's last line.
func (s *Summary) TotalsLine() string {
	t := s.Totals
	parts := []string{
		fmt.Sprintf("%d blocked in tests", t.Blocked),
		fmt.Sprintf("%d at collection time", t.Collection),
	}
	if t.WouldBlock > 0 {
		parts = append(parts, fmt.Sprintf("%d would be blocked (audit mode)", t.WouldBlock))
	}
	parts = append(parts, fmt.Sprintf("%d allowed", t.Allowed), plural(t.Stale, "stale marker"))
	if t.BadMarkers > 0 {
		parts = append(parts, plural(t.BadMarkers, "bad marker"))
	}
	if t.UnusedRules > 0 {
		parts = append(parts, plural(t.UnusedRules, "unused --allow-test rule"))
	}
	if t.Errors > 0 {
		parts = append(parts, plural(t.Errors, "nettrap error"))
	}
	return "nettrap: total: " + strings.Join(parts, ", ")
}

// section is one table of the summary.
type section struct {
	title string
	rows  []Row
	cols  []string
	cells func(Row) []string
}

// blocked is a section of blocked attempts: a WHERE column when a row
// knows where (from the caller's stack), none otherwise.
func blocked(title string, rows []Row) section {
	cols := []string{"PACKAGE", "TEST", "OPERATION", "DESTINATION", "CLASS", "COUNT"}
	cells := func(r Row) []string {
		return []string{pkgOf(r), r.Who(), r.Operation, dash(r.Dest), dash(r.Class), r.CountText()}
	}
	if !slices.ContainsFunc(rows, func(r Row) bool { return r.Where != "" }) {
		return section{title, rows, cols, cells}
	}
	cols = slices.Insert(cols, 2, "WHERE")
	return section{title, rows, cols, func(r Row) []string { return slices.Insert(cells(r), 2, dash(r.Where)) }}
}

func (s *Summary) sections() []section {
	return []section{
		blocked("Blocked", s.Blocked),
		blocked("At collection time (package init, TestMain, between tests: fails the package)", s.Collection),
		blocked("Would be blocked (--mode=audit)", s.WouldBlock),
		{"Allowed", s.Allowed, []string{"PACKAGE", "TEST", "OPERATION", "DESTINATION", "REASON", "COUNT"},
			func(r Row) []string {
				return []string{pkgOf(r), r.Who(), r.Operation, dash(r.Dest), dash(r.Reason), r.CountText()}
			}},
		{"Stale markers (marked tests that made no network attempt: remove the marker if the test is mocked)", s.Stale,
			[]string{"PACKAGE", "TEST"}, func(r Row) []string { return []string{pkgOf(r), r.Who()} }},
		{`Bad markers (a nettrap marker with an unknown value: fails the test; the marker is t.Attr("nettrap", "network") or t.Log("nettrap:network"))`, s.BadMarkers,
			[]string{"PACKAGE", "TEST", "VALUE"}, func(r Row) []string { return []string{pkgOf(r), r.Who(), fmt.Sprintf("%q", r.Marker)} }},
		{"Unused --allow-test rules (named no test that made a network attempt: remove the rule if those tests are mocked)", s.UnusedRules,
			[]string{"RULE"}, func(r Row) []string { return []string{r.Rule} }},
		{"nettrap errors", s.Errors, []string{"PACKAGE", "REASON"},
			func(r Row) []string { return []string{pkgOf(r), dash(r.Reason)} }},
	}
}

// Text writes the human summary: one line when the run is clean, else the
// headline, a table per kind of finding, and the totals.
func (s *Summary) Text(w io.Writer) error {
	if s.Clean() {
		_, err := fmt.Fprintln(w, s.Headline())
		return err
	}
	fmt.Fprintln(w, s.Headline())
	for _, sec := range s.sections() {
		if len(sec.rows) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s:\n", sec.title)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  "+strings.Join(sec.cols, "\t"))
		for _, r := range sec.rows {
			fmt.Fprintln(tw, "  "+strings.Join(sec.cells(r), "\t"))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintln(w, "\n"+s.TotalsLine())
	return err
}

// Stacks writes the whole stack of each row of blocked attempts that
// has one (its first attempt's, as the audit record has it: every
// frame, files as the binary names them), after a line naming the row.
// The lines in the test output show only the module's frames of it
// (`nettrap report --stacks`).
func (s *Summary) Stacks(w io.Writer) error {
	var b strings.Builder
	for _, rows := range [][]Row{s.Blocked, s.Collection, s.WouldBlock} {
		for _, r := range rows {
			if len(r.Stack) == 0 {
				continue
			}
			if b.Len() == 0 {
				b.WriteString("\nStacks (the first attempt of each row, innermost frame first):\n")
			}
			fmt.Fprintf(&b, "\n  %s %s: %s %s\n", pkgOf(r), r.Who(), r.Operation, dash(r.Dest))
			for _, f := range r.Stack {
				fmt.Fprintf(&b, "    %s (%s)\n", f.Loc(), f.ShortFunc())
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// JSON writes the summary as one indented JSON object.
func (s *Summary) JSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(s)
}

// CountText is the row's COUNT: its attempts, or for a DNS lookup the
// queries it made ("4 queries"), which say more than its one attempt.
func (r Row) CountText() string {
	if r.Queries > 0 {
		return plural(r.Queries, "query")
	}
	return fmt.Sprint(r.Count)
}

func pkgOf(r Row) string {
	if r.Package == "" {
		return "-"
	}
	return r.Package
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func plural(n int, what string) string {
	switch {
	case n == 1:
		return "1 " + what
	case strings.HasSuffix(what, "y"):
		return fmt.Sprintf("%d %sies", n, strings.TrimSuffix(what, "y"))
	}
	return fmt.Sprintf("%d %ss", n, what)
}
