package report

import (
	"fmt"
	"io"
	"strings"
)

// Markdown writes the summary for a GitHub step summary or a pull request
// comment. maxRows bounds the rows of each table (0: no bound); the rest
// is counted in a line under the table, so that the output can be kept
// under a size limit.
func (s *Summary) Markdown(w io.Writer, maxRows int) error {
	var b strings.Builder
	if s.Scope != "" {
		b.WriteString("### nettrap: " + mdEscape(s.Scope) + "\n\n")
	} else {
		b.WriteString("### nettrap\n\n")
	}
	b.WriteString(mdEscape(strings.TrimPrefix(s.Headline(), "nettrap: ")) + "\n")
	if !s.Clean() {
		for _, sec := range s.sections() {
			if len(sec.rows) == 0 {
				continue
			}
			fmt.Fprintf(&b, "\n**%s**\n\n", mdEscape(sec.title))
			b.WriteString("| " + strings.Join(sec.cols, " | ") + " |\n")
			b.WriteString(strings.Repeat("| --- ", len(sec.cols)) + "|\n")
			rows := sec.rows
			if maxRows > 0 && len(rows) > maxRows {
				rows = rows[:maxRows]
			}
			for _, r := range rows {
				cells := sec.cells(r)
				for i, c := range cells {
					cells[i] = mdCell(c)
				}
				b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
			}
			if n := len(sec.rows) - len(rows); n > 0 {
				fmt.Fprintf(&b, "\n_%d more rows not shown; run `nettrap report` on the audit log for all of them._\n", n)
			}
		}
		b.WriteString("\n" + mdEscape(strings.TrimPrefix(s.TotalsLine(), "nettrap: ")) + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// mdCell puts a value in a table cell as code, so that test names and
// addresses show as they are.
func mdCell(s string) string {
	if s == "-" {
		return s
	}
	s = strings.ReplaceAll(s, "|", `\|`)
	s = strings.ReplaceAll(s, "\n", " ")
	s = strings.ReplaceAll(s, "`", "'")
	return "`" + s + "`"
}

// mdEscape keeps text from turning into Markdown by accident.
func mdEscape(s string) string {
	r := strings.NewReplacer(`\`, `\\`, "*", `\*`, "_", `\_`, "`", "\\`", "|", `\|`, "<", "&lt;", ">", "&gt;", "[", `\[`, "]", `\]`)
	return r.Replace(s)
}
