package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func env(kv ...string) func(string) string {
	return func(k string) string {
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i] == k {
				return kv[i+1]
			}
		}
		return ""
	}
}

// A bad value names what the user wrote: the flag, or the variable.
func TestConfigErrorsNameTheSource(t *testing.T) {
	for _, tc := range []struct {
		args      []string
		env       []string
		want, not string
	}{
		{[]string{"--mode=bogus", "--", "x"}, nil, `bad --mode "bogus"`, "NETTRAP_MODE"},
		{[]string{"--", "x"}, []string{"NETTRAP_MODE", "bogus"}, `bad NETTRAP_MODE "bogus"`, "--mode"},
		{[]string{"--", "x"}, []string{"NETTRAP_ERRNO", "ENOPE"}, `bad NETTRAP_ERRNO "ENOPE"`, "--errno"},
		{[]string{"--errno=ENOPE", "--", "x"}, nil, `bad --errno "ENOPE"`, "NETTRAP_ERRNO"},
		{[]string{"--", "x"}, []string{"NETTRAP_ALLOW", "10.0.0.0/8,example.com"}, `bad NETTRAP_ALLOW "example.com"`, "--allow"},
		{[]string{"--allow=example.com", "--", "x"}, nil, `bad --allow "example.com"`, "NETTRAP_ALLOW"},
		{[]string{"--allow-unix=docker.sock", "--", "x"}, nil, `bad --allow-unix "docker.sock": not an absolute path`, "NETTRAP_"},
		{[]string{"--", "x"}, []string{"NETTRAP_ALLOW_UNIX", "/run/a.sock,@"}, `bad NETTRAP_ALLOW_UNIX "@"`, "--allow-unix"},
		{[]string{"--", "x"}, []string{"NETTRAP_ALLOW_TEST", "("}, `bad NETTRAP_ALLOW_TEST "("`, "--allow-test"},
		{[]string{"--", "x"}, []string{"NETTRAP_ALLOW_UNSPECIFIED", "yes"}, `bad NETTRAP_ALLOW_UNSPECIFIED="yes"`, "--allow"},
		{[]string{"--resolv-conf=/nonexistent", "--", "x"}, nil, "bad --resolv-conf: open /nonexistent", "NETTRAP_"},
		{[]string{"--", "x"}, []string{"NETTRAP_RESOLV_CONF", "/nonexistent"}, "bad NETTRAP_RESOLV_CONF: open /nonexistent", "--resolv"},
		{[]string{"--summary=", "--", "x"}, nil, "bad --summary: empty", "NETTRAP_"},
		{[]string{"--cache=maybe", "--", "x"}, nil, `bad --cache "maybe"`, "NETTRAP_"},
		{[]string{"--", "x"}, []string{"NETTRAP_CACHE", "sometimes"}, `bad NETTRAP_CACHE "sometimes"`, "--cache"},
	} {
		_, err := parseConfig(tc.args, env(tc.env...))
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), tc.not) {
			t.Errorf("%q %q: error %v, want %q and no %q", tc.args, tc.env, err, tc.want, tc.not)
		}
	}
}

// The command line wins over the variables; the default resolv.conf may
// be missing, a named one may not.
func TestConfigFlagsAndVariables(t *testing.T) {
	cfg, err := parseConfig([]string{"--mode=enforce", "--", "x", "-v"},
		env("NETTRAP_MODE", "audit", "NETTRAP_ALLOW_UNSPECIFIED", "1", "NETTRAP_SUMMARY", "off"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.mode.String() != "enforce" || !cfg.allowUnspecified || cfg.summary != "off" || !slices.Equal(cfg.args, []string{"x", "-v"}) {
		t.Errorf("config %+v", cfg)
	}
	if cfg.resolvConfGiven {
		t.Error("the default resolv.conf counted as given")
	}
	rc := filepath.Join(t.TempDir(), "resolv.conf")
	os.WriteFile(rc, []byte("nameserver 192.0.2.53\n"), 0o644)
	if cfg, err = parseConfig([]string{"--", "x"}, env("NETTRAP_RESOLV_CONF", rc)); err != nil || !cfg.resolvConfGiven || cfg.resolvConf != rc {
		t.Errorf("NETTRAP_RESOLV_CONF=%s: %+v, %v", rc, cfg, err)
	}
	for _, args := range [][]string{{"--help"}, {"-h"}, {"--version"}} {
		// Help and version are answered whatever the rest says.
		if _, err := parseConfig(args, env("NETTRAP_MODE", "bogus")); err != nil {
			t.Errorf("%q with a bad variable: %v", args, err)
		}
	}
}

func TestUnknownVariables(t *testing.T) {
	got := unknownVarWarnings([]string{"PATH=/bin", "NETTRAP_MODE=audit", "NETTRAP_MOD=audit", "NETTRAP_AUDITLOG=x",
		"NETTRAP_HUB=/x", "NETTRAP_INNER=1", "NETTRAP_ALLOW_UNSPECIFIED=1", "NETTRAP_SUMARY=off", "NETTRAP_WHATEVER=1",
		"NETTRAP_TEST_NO_SYNC_WAKEUP=1", "NETTRAP_TEST_NO_KILLABLE_RECV=1"})
	want := []string{
		"unknown variable NETTRAP_MOD (did you mean NETTRAP_MODE?)",
		"unknown variable NETTRAP_AUDITLOG (did you mean NETTRAP_AUDIT_LOG?)",
		"unknown variable NETTRAP_SUMARY (did you mean NETTRAP_SUMMARY?)",
		"unknown variable NETTRAP_WHATEVER",
	}
	if !slices.Equal(got, want) {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A mistyped flag is named with the flag it likely meant, as a mistyped
// variable is (nearest); one written with a single dash gets its two.
func TestUnknownFlagSuggestion(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--alow", "10.0.0.0/8", "--", "go", "test"}, "unknown flag: --alow (did you mean --allow?)"},
		{[]string{"--alow=10.0.0.0/8", "--", "x"}, "unknown flag: --alow (did you mean --allow?)"},
		{[]string{"--allow-tests", "TestX", "--", "x"}, "unknown flag: --allow-tests (did you mean --allow-test?)"},
		{[]string{"--sumary=off", "--", "x"}, "unknown flag: --sumary (did you mean --summary?)"},
		{[]string{"--seal", "--", "x"}, "unknown flag: --seal (did you mean --sealed?)"},
		{[]string{"--audit", "--", "x"}, "unknown flag: --audit (did you mean --audit-log?)"},
		{[]string{"-allow", "10.0.0.0/8", "--", "x"}, "unknown shorthand flag: 'a' in -allow (did you mean --allow?)"},
		{[]string{"-mode=audit", "--", "x"}, "unknown shorthand flag: 'm' in -mode=audit (did you mean --mode?)"},
		{[]string{"--no-such-flag", "--", "x"}, "unknown flag: --no-such-flag"},
		{[]string{"-x", "--", "x"}, "unknown shorthand flag: 'x' in -x"},
	} {
		_, err := parseConfig(tc.args, env())
		if err == nil || err.Error() != tc.want {
			t.Errorf("%q: error %v, want %q", tc.args, err, tc.want)
		}
	}
	// nettrap report alike, with its own flags.
	want := "report: unknown flag: --fromat (did you mean --format?) (see nettrap report --help)"
	if err := runReport([]string{"--fromat=json", "x.jsonl"}); err == nil || err.Error() != want {
		t.Errorf("nettrap report --fromat: error %v, want %q", err, want)
	}
}

// The help shows placeholders, not pflag's type names, and says what a
// newcomer needs: the marker, the exit codes, the README, every variable.
func TestHelpText(t *testing.T) {
	var b bytes.Buffer
	printUsage(&b)
	help := b.String()
	for _, want := range []string{
		"--allow CIDR[:PORT]", "--allow-test RULE", "--errno NAME", "--audit-log FILE", "--resolv-conf FILE",
		"--summary WHERE", "--allow-unspecified ", "--version", "-h, --help", "--engine ENGINE", "NETTRAP_ENGINE",
		`t.Attr("nettrap", "network")`, "125", "126", "127", "README", "NETTRAP_ALLOW_UNSPECIFIED",
		"# blocked: dns", "--summary=off", "--cache MODE", "MODE on or off",
	} {
		if !strings.Contains(help, want) {
			t.Errorf("help lacks %q", want)
		}
	}
	// --sealed says what it does with --allow-test: refuses the run; and
	// --allow-test says so too.
	for _, want := range []string{
		"--sealed untrusted code: the tests' markers count for nothing and only --allow rules open anything; " +
			"with --allow-test (or NETTRAP_ALLOW_TEST) nettrap refuses to run (exit status 125); NETTRAP_SEALED",
		"--allow-test RULE let the tests RULE names use the network, as if marked: a regexp on the full test name, " +
			"or PKG.REGEX for one package (repeatable; refused with --sealed); NETTRAP_ALLOW_TEST",
	} {
		found := false
		for _, line := range strings.Split(help, "\n") {
			found = found || strings.Join(strings.Fields(line), " ") == want
		}
		if !found {
			t.Errorf("help lacks the line %q", want)
		}
	}
	for _, bad := range []string{"--allow-test count for nothing", "stringArray", "string ", "[=true|false]", "--cache on ", "curl https://example.com        # blocked: external"} {
		if strings.Contains(help, bad) {
			t.Errorf("help has %q", bad)
		}
	}
}

// --cache is on unless --cache=off or NETTRAP_CACHE=off says otherwise.
func TestCacheSetting(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  []string
		want bool
	}{
		{[]string{"--", "go", "test"}, nil, true},
		{[]string{"--cache=off", "--", "go", "test"}, nil, false},
		{[]string{"--", "go", "test"}, []string{"NETTRAP_CACHE", "off"}, false},
		{[]string{"--cache=on", "--", "go", "test"}, []string{"NETTRAP_CACHE", "off"}, true},
	} {
		cfg, err := parseConfig(tc.args, env(tc.env...))
		if err != nil {
			t.Fatal(err)
		}
		if o := cfg.options(); o.Cache != tc.want {
			t.Errorf("%q %q: Cache %v, want %v", tc.args, tc.env, o.Cache, tc.want)
		}
	}
}

// --allow-unix and NETTRAP_ALLOW_UNIX give checked, cleaned names; the
// flag wins over the variable, as for every setting.
func TestAllowUnixValues(t *testing.T) {
	for _, tc := range []struct {
		args, env []string
		want      []string
	}{
		{[]string{"--", "x"}, []string{"NETTRAP_ALLOW_UNIX", "/run/a.sock,@agent"}, []string{"/run/a.sock", "@agent"}},
		{[]string{"--allow-unix=/run//b.sock", "--allow-unix", "@x", "--", "x"}, nil, []string{"/run/b.sock", "@x"}},
		{[]string{"--allow-unix=/c.sock", "--", "x"}, []string{"NETTRAP_ALLOW_UNIX", "/d.sock"}, []string{"/c.sock"}},
	} {
		cfg, err := parseConfig(tc.args, env(tc.env...))
		if err != nil || !slices.Equal(cfg.allowUnix, tc.want) {
			t.Errorf("%v %v: got %v, %v; want %v", tc.args, tc.env, cfg.allowUnix, err, tc.want)
		}
	}
}
