package gotest

import (
	"fmt"
	"regexp"
	"strings"
)

// TestRule is one --allow-test rule: a regular expression on a test's full
// name (TestX/sub), optionally limited to one package. A rule with no
// package matches the tests of every package; `pkg.TestName` or
// `example.com/m/pkg.TestName` matches only the tests of the package whose
// import path is, or ends in, that path (at a '/').
type TestRule struct {
	// Raw is the rule as the user wrote it, which names it in findings.
	Raw string
	// Package is the package path the rule is limited to, "" for any.
	Package string
	name    *regexp.Regexp
}

// testFuncPrefixes start the name of every test function the testing
// package runs (a package-qualified rule splits before one of them).
var testFuncPrefixes = []string{"Test", "Example", "Fuzz", "Benchmark"}

// ParseTestRule reads an --allow-test value. The package part, if any,
// ends at the first '.' followed by a test function's name (optionally
// after '^'), and holds only what an import path holds: `^TestA.*` and
// `Test.*Setup` stay plain expressions.
func ParseTestRule(s string) (TestRule, error) {
	pkg, expr := splitTestRule(s)
	re, err := regexp.Compile(expr)
	if err != nil {
		return TestRule{}, fmt.Errorf("%q: %w", s, err)
	}
	if expr == "" {
		return TestRule{}, fmt.Errorf("%q: no test name after the package %q", s, pkg)
	}
	return TestRule{Raw: s, Package: pkg, name: re}, nil
}

// MustParseTestRule is ParseTestRule for tests and fixed rules.
func MustParseTestRule(s string) TestRule {
	r, err := ParseTestRule(s)
	if err != nil {
		panic(err)
	}
	return r
}

func splitTestRule(s string) (pkg, expr string) {
	for i := 0; i < len(s); i++ {
		if s[i] != '.' {
			continue
		}
		rest := strings.TrimPrefix(s[i+1:], "^")
		for _, p := range testFuncPrefixes {
			if strings.HasPrefix(rest, p) && i > 0 && isImportPath(s[:i]) {
				return s[:i], s[i+1:]
			}
		}
	}
	return "", s
}

// isImportPath: s holds only the characters of an import path, so that
// no regular expression is taken for a package.
func isImportPath(s string) bool {
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case strings.ContainsRune("./-_~+", r):
		default:
			return false
		}
	}
	return !strings.HasPrefix(s, "/") && !strings.HasSuffix(s, "/")
}

// Match says whether the rule names test of package pkg (an import path;
// "" when unknown, which a package-limited rule never matches).
func (r TestRule) Match(pkg, test string) bool {
	if r.Package != "" && pkg != r.Package && !strings.HasSuffix(pkg, "/"+r.Package) {
		return false
	}
	return r.name.MatchString(test)
}

// String is the rule as written.
func (r TestRule) String() string { return r.Raw }
