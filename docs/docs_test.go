package docs

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// pages returns README.md and every docs/*.md, as paths relative to this
// package's directory (where go test runs it).
func pages(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) == 0 {
		t.Fatal("no docs/*.md found")
	}
	return append([]string{filepath.Join("..", "README.md")}, docs...)
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// fence opens or closes a fenced code block.
var fence = regexp.MustCompile("^ {0,3}(```|~~~)")

// prose returns the lines of a Markdown file with fenced code blocks
// blanked, so that line numbers stay those of the file.
func prose(text string) []string {
	lines := strings.Split(text, "\n")
	in := false
	for i, l := range lines {
		if fence.MatchString(l) {
			in = !in
			lines[i] = ""
			continue
		}
		if in {
			lines[i] = ""
		}
	}
	return lines
}

// withoutCode replaces every inline code span (a run of n backticks up to
// the next run of exactly n) with the word "code", so that a link shown as
// code is not taken for a link. A run with no closing run is left as it is.
func withoutCode(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] != '`' {
			b.WriteByte(s[i])
			i++
			continue
		}
		n := run(s, i)
		end := -1
		for j := i + n; j < len(s); {
			if s[j] != '`' {
				j++
				continue
			}
			m := run(s, j)
			if m == n {
				end = j + m
				break
			}
			j += m
		}
		if end < 0 {
			b.WriteString(s[i : i+n])
			i += n
			continue
		}
		b.WriteString("code")
		i = end
	}
	return b.String()
}

// run returns how many backticks start at s[i].
func run(s string, i int) int {
	n := 0
	for i+n < len(s) && s[i+n] == '`' {
		n++
	}
	return n
}

var (
	heading = regexp.MustCompile(`^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$`)
	// link is an inline link or image, [text](target) or [text](target
	// "title"); its text may span lines.
	link     = regexp.MustCompile(`\[([^\]]*)\]\(([^)\s]*)(?:\s+"[^"]*")?\)`)
	scheme   = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
	linkText = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
)

// slug is the anchor GitHub gives a heading: its text as shown (code
// spans' backticks and links' targets gone), lowercase, with every
// character but letters, marks, digits, connector punctuation ('_'), '-'
// and ' ' dropped, and spaces turned into '-'.
func slug(text string) string {
	text = linkText.ReplaceAllString(text, "$1")
	text = strings.ReplaceAll(text, "`", "")
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-', unicode.IsLetter(r), unicode.IsMark(r), unicode.IsDigit(r),
			unicode.IsNumber(r), unicode.Is(unicode.Pc, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors returns the anchors of a Markdown file's headings; a repeated
// slug gets -1, -2, ... as on GitHub.
func anchors(text string) map[string]bool {
	set := map[string]bool{}
	seen := map[string]int{}
	for _, l := range prose(text) {
		m := heading.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		s := slug(m[1])
		if n := seen[s]; n > 0 {
			set[fmt.Sprintf("%s-%d", s, n)] = true
		} else {
			set[s] = true
		}
		seen[s]++
	}
	return set
}

func TestSlug(t *testing.T) {
	for _, c := range []struct{ heading, want string }{
		{"Two commands", "two-commands"},
		{"Classes (by address only — nettrap never resolves a name)", "classes-by-address-only--nettrap-never-resolves-a-name"},
		{"`nettrap -- go test`", "nettrap----go-test"},
		{"`--sealed`: untrusted code", "--sealed-untrusted-code"},
		{"The binary's arguments", "the-binarys-arguments"},
		{"Namespaces the test makes (both modes)", "namespaces-the-test-makes-both-modes"},
		{"snake_case and [a link](x.md)", "snake_case-and-a-link"},
	} {
		if got := slug(c.heading); got != c.want {
			t.Errorf("slug(%q) = %q, want %q", c.heading, got, c.want)
		}
	}
	got := anchors("# A\n\n## A\n\n```\n# not a heading\n```\n### A ###\n")
	want := map[string]bool{"a": true, "a-1": true, "a-2": true}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("anchors = %v, want %v", got, want)
	}
}

// TestLinks checks every relative link of README.md and docs/*.md: the
// file or directory it names exists, and its anchor, if any, is a heading
// of the Markdown file it names.
func TestLinks(t *testing.T) {
	cache := map[string]map[string]bool{}
	targetAnchors := func(path string) map[string]bool {
		if a, ok := cache[path]; ok {
			return a
		}
		a := anchors(read(t, path))
		cache[path] = a
		return a
	}
	checked := 0
	for _, page := range pages(t) {
		lines := prose(read(t, page))
		text := withoutCode(strings.Join(lines, "\n"))
		for _, m := range link.FindAllStringSubmatchIndex(text, -1) {
			target := text[m[4]:m[5]]
			line := 1 + strings.Count(text[:m[0]], "\n")
			where := fmt.Sprintf("%s:%d", filepath.Clean(filepath.Join("docs", page)), line)
			if target == "" {
				t.Errorf("%s: empty link target", where)
				continue
			}
			if scheme.MatchString(target) {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			path := page
			if file != "" {
				path = filepath.Join(filepath.Dir(page), file)
			}
			checked++
			fi, err := os.Stat(path)
			if err != nil {
				t.Errorf("%s: link to %q: %v", where, target, err)
				continue
			}
			if anchor == "" {
				continue
			}
			if fi.IsDir() || filepath.Ext(path) != ".md" {
				t.Errorf("%s: link to %q: an anchor in a file that is not Markdown", where, target)
				continue
			}
			if !targetAnchors(path)[anchor] {
				t.Errorf("%s: link to %q: no heading with anchor %q in %s", where, target, anchor, filepath.Clean(filepath.Join("docs", path)))
			}
		}
	}
	if checked == 0 {
		t.Error("no relative links found: the link parser is broken")
	}
}

// TestReadmeLinksEveryPage checks that the README's table of links names
// every page in docs/.
func TestReadmeLinksEveryPage(t *testing.T) {
	readme := withoutCode(strings.Join(prose(read(t, filepath.Join("..", "README.md"))), "\n"))
	var linked []string
	for _, m := range link.FindAllStringSubmatch(readme, -1) {
		file, _, _ := strings.Cut(m[2], "#")
		linked = append(linked, filepath.Clean(file))
	}
	docs, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		if !slices.Contains(linked, filepath.Join("docs", d)) {
			t.Errorf("README.md does not link to docs/%s", d)
		}
	}
}

// TestPagesSayWhatTheyAreFor checks that every page opens with a title and
// then one paragraph that says what the page is for.
func TestPagesSayWhatTheyAreFor(t *testing.T) {
	docs, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		title, rest, _ := strings.Cut(read(t, d), "\n")
		if !strings.HasPrefix(title, "# ") {
			t.Errorf("docs/%s: the first line is %q, want a title (# ...)", d, title)
			continue
		}
		if !strings.HasPrefix(strings.TrimLeft(rest, "\n"), "This page is for ") {
			t.Errorf("docs/%s: the first paragraph does not start with \"This page is for \"", d)
		}
	}
}

// docRef is a docs page named in a message nettrap prints, with its
// anchor: "docs/tests.md#the-marker".
var docRef = regexp.MustCompile(`docs/([a-z0-9-]+\.md)(#[a-z0-9_-]+)?`)

// TestMessagesNameExistingPages checks the docs pages (and anchors) that
// nettrap's messages send users to, in every string literal of the Go
// sources outside tests: a renamed heading must not leave advice
// pointing nowhere.
func TestMessagesNameExistingPages(t *testing.T) {
	refs := 0
	err := filepath.WalkDir("..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != ".." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		for _, lit := range stringLiterals(read(t, path)) {
			for _, m := range docRef.FindAllStringSubmatch(lit, -1) {
				refs++
				checkDocRef(t, path, m[1], strings.TrimPrefix(m[2], "#"))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if refs == 0 {
		t.Fatal("no message names a docs page: the scan is broken")
	}
}

// stringLiteral is a Go string literal, interpreted or raw.
var stringLiteral = regexp.MustCompile("\"(?:[^\"\\\\\\n]|\\\\.)*\"|`[^`]*`")

// stringLiterals returns the string literals of Go source outside line
// comments (comments may name pages loosely: "docs/x.md, section").
func stringLiterals(src string) []string {
	var out []string
	for line := range strings.Lines(src) {
		if strings.HasPrefix(strings.TrimSpace(line), "//") {
			continue
		}
		out = append(out, stringLiteral.FindAllString(line, -1)...)
	}
	return out
}

func checkDocRef(t *testing.T, where, page, anchor string) {
	t.Helper()
	text, err := os.ReadFile(page)
	if err != nil {
		t.Errorf("%s names docs/%s: %v", where, page, err)
		return
	}
	if anchor != "" && !anchors(string(text))[anchor] {
		t.Errorf("%s names docs/%s#%s: no heading with that anchor", where, page, anchor)
	}
}

// TestPackageMap checks development.md's package map against the
// module: every directory of the module that holds Go files (nested
// modules, testdata and dot directories aside) has a row, and every row
// names a directory that exists.
func TestPackageMap(t *testing.T) {
	text := read(t, "development.md")
	_, section, ok := strings.Cut(text, "\n## Package map\n")
	if !ok {
		t.Fatal("docs/development.md has no \"## Package map\" section")
	}
	if i := strings.Index(section, "\n## "); i >= 0 {
		section = section[:i]
	}
	row := regexp.MustCompile("(?m)^\\| `([^`]+)` \\|")
	rows := map[string]bool{}
	for _, m := range row.FindAllStringSubmatch(section, -1) {
		rows[m[1]] = true
		if fi, err := os.Stat(filepath.Join("..", m[1])); err != nil || !fi.IsDir() {
			t.Errorf("docs/development.md's package map has a row for %s, which is not a directory of the repository", m[1])
		}
	}
	if len(rows) == 0 {
		t.Fatal("no rows in docs/development.md's package map: the parser is broken")
	}
	var missing []string
	err := filepath.WalkDir("..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel("..", path)
		if err != nil {
			return err
		}
		if rel != "." {
			if strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir // a module of its own
			}
		}
		gofiles, err := filepath.Glob(filepath.Join(path, "*.go"))
		if err != nil {
			return err
		}
		if len(gofiles) > 0 && !rows[filepath.ToSlash(rel)] {
			missing = append(missing, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range missing {
		t.Errorf("package %s has no row in docs/development.md's package map", p)
	}
}

// outside are words that cite what a clone of the repository does not
// have.
var outside = []string{"shared folder", "beside this repository"}

// parentPath is a relative path that climbs: ../x, ../../x.
var parentPath = regexp.MustCompile(`(?:\.\./)+[^\s)\]` + "`" + `'"<>]*`)

// TestNothingOutsideTheRepository checks that README.md and docs/*.md cite
// nothing a clone does not hold: no relative path, in a link, in code or
// in prose, climbs out of the repository, and no page points at a folder
// beside it.
func TestNothingOutsideTheRepository(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	for _, page := range pages(t) {
		text := read(t, page)
		where := filepath.Clean(filepath.Join("docs", page))
		dir, err := filepath.Abs(filepath.Dir(page))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range parentPath.FindAllString(text, -1) {
			abs := filepath.Join(dir, p)
			if abs != root && !strings.HasPrefix(abs, root+string(filepath.Separator)) {
				t.Errorf("%s cites %q, outside the repository", where, p)
			}
		}
		lower := strings.ToLower(text)
		for _, w := range outside {
			if strings.Contains(lower, w) {
				t.Errorf("%s says %q: the repository must hold what it cites", where, w)
			}
		}
	}
}
