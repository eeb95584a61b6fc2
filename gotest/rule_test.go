package gotest

import "testing"

func TestParseTestRule(t *testing.T) {
	for _, c := range []struct {
		rule, pkg, test string
		want            bool
	}{
		{"^TestSetup$", "example.com/m/a", "TestSetup", true},
		{"^TestSetup$", "example.com/m/b", "TestSetup", true},
		{"a.TestSetup", "example.com/m/a", "TestSetup", true},
		{"a.TestSetup", "example.com/m/b", "TestSetup", false},
		{"a.TestSetup", "example.com/m/xa", "TestSetup", false},
		{"a.^TestSetup$", "example.com/m/a", "TestSetupMore", false},
		{"a.^TestSetup$", "example.com/m/a", "TestSetup", true},
		{"m/a.TestSetup", "example.com/m/a", "TestSetup", true},
		{"example.com/m/a.TestSetup", "example.com/m/a", "TestSetup", true},
		{"example.com/m/a.TestSetup", "other.org/m/a", "TestSetup", false},
		{"a.TestSetup", "", "TestSetup", false}, // package unknown: a limited rule fails closed
		{"^TestA.*", "example.com/m/b", "TestAB", true},
		{"Test.*Setup", "p", "TestDBSetup", true},
		{"(a|b).TestX", "p", "aXTestX", true}, // a regular expression, not a package
		{"cmd/tool.Example", "example.com/cmd/tool", "ExampleRun", true},
		{"a.TestX/sub", "example.com/a", "TestX/sub", true},
	} {
		r, err := ParseTestRule(c.rule)
		if err != nil {
			t.Errorf("ParseTestRule(%q): %v", c.rule, err)
			continue
		}
		if got := r.Match(c.pkg, c.test); got != c.want {
			t.Errorf("%q (package %q).Match(%q, %q) = %v, want %v", c.rule, r.Package, c.pkg, c.test, got, c.want)
		}
	}
}

func TestParseTestRuleErrors(t *testing.T) {
	for _, bad := range []string{"a.Test(", "(", "[z-a]"} {
		if _, err := ParseTestRule(bad); err == nil {
			t.Errorf("ParseTestRule(%q) = nil error", bad)
		}
	}
}

func FuzzParseTestRule(f *testing.F) {
	for _, s := range []string{"a.TestX", "^TestX$", "example.com/m.^Test", ".Test", "a..TestB"} {
		f.Add(s, "example.com/m/a", "TestX")
	}
	f.Fuzz(func(t *testing.T, rule, pkg, test string) {
		r, err := ParseTestRule(rule)
		if err != nil {
			return
		}
		if r.Raw != rule {
			t.Fatalf("Raw %q, want %q", r.Raw, rule)
		}
		if r.Package != "" && !isImportPath(r.Package) {
			t.Fatalf("package %q of %q is no import path", r.Package, rule)
		}
		if r.Match("", test) && r.Package != "" {
			t.Fatalf("%q matched an unknown package", rule)
		}
	})
}
