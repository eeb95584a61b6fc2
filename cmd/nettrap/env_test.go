package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/nettrap/nettrap/run"
)

// The flags of the run reach every -exec nettrap through NETTRAP_*
// variables, and parse back to the same configuration.
func TestInnerEnvRoundTrip(t *testing.T) {
	outer, err := parseConfig([]string{"--mode=audit", "--allow", "192.0.2.0/24:443", "--allow", "198.51.100.7/32",
		"--allow-test", "^TestA$", "--allow-test", "Test(B|C), x", "--errno", "EACCES", "--allow-unspecified",
		"--allow-unix", "/run/a.sock", "--allow-unix", "@agent", "--", "go", "test"}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	env := outer.InnerEnv([]string{"PATH=/bin", "NETTRAP_MODE=enforce", "NETTRAP_GENERIC=1", "NETTRAP_SUMMARY=off"},
		run.Inner{AuditLog: "/tmp/a.jsonl", RunDir: "/tmp/run", ResolvConf: "/etc/resolv.conf", RunID: "run1", Hub: "/tmp/hub.sock"})
	if !slices.Contains(env, "PATH=/bin") || slices.Contains(env, "NETTRAP_MODE=enforce") || slices.Contains(env, "NETTRAP_GENERIC=1") ||
		slices.Contains(env, "NETTRAP_SUMMARY=off") || !slices.Contains(env, "NETTRAP_INNER=/tmp/run") {
		t.Errorf("env %q: want PATH kept, the user's NETTRAP_* replaced, no summary, the inner mark", env)
	}
	get := func(k string) string {
		for _, kv := range env {
			if v, ok := strings.CutPrefix(kv, k+"="); ok {
				return v
			}
		}
		return ""
	}
	inner, err := parseConfig([]string{"/tmp/x.test", "-test.v"}, get)
	if err != nil {
		t.Fatal(err)
	}
	if inner.mode != outer.mode || inner.errno != outer.errno || inner.auditLog != "/tmp/a.jsonl" || inner.runID != "run1" || !inner.allowUnspecified ||
		!slices.Equal(inner.raw.allow, outer.raw.allow) || !slices.Equal(inner.raw.allowTests, outer.raw.allowTests) ||
		!slices.Equal(inner.allowUnix, outer.allowUnix) ||
		inner.hub != "/tmp/hub.sock" || inner.outerRun != "/tmp/run" || inner.resolvConf != "/etc/resolv.conf" {
		t.Errorf("inner config %+v\ndiffers from outer %+v", inner, outer)
	}
}

// No run dir: the inner mark is still set, so that the inner knows an
// outer nettrap started it; no hub: no NETTRAP_HUB.
func TestInnerEnvMarks(t *testing.T) {
	cfg, err := parseConfig([]string{"--", "go", "test"}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	env := cfg.InnerEnv(nil, run.Inner{AuditLog: "/tmp/a.jsonl", RunID: "r"})
	if !slices.Contains(env, "NETTRAP_INNER=1") {
		t.Errorf("env %q lacks NETTRAP_INNER=1", env)
	}
	for _, kv := range env {
		if strings.HasPrefix(kv, "NETTRAP_HUB=") {
			t.Errorf("no hub, yet %q", kv)
		}
	}
}

// Every name the package looks up is in the table, and every variable
// is spelled once.
func TestSettingNames(t *testing.T) {
	for _, name := range []string{"mode", "errno", "allow", "allow-test", "audit-log", "resolv-conf", "run-id",
		"sealed", "emulate", "inner", "hub", "allow-unspecified", "generic", "summary"} {
		if envName(name) == "" {
			t.Errorf("no variable for %q", name)
		}
	}
	seen := map[string]bool{}
	for _, s := range settings {
		if s.env != "" && (seen[s.env] || !strings.HasPrefix(s.env, "NETTRAP_")) {
			t.Errorf("variable %q twice, or not NETTRAP_*", s.env)
		}
		seen[s.env] = true
		if s.env != "" && s.def != nil && s.env != "NETTRAP_"+strings.ToUpper(strings.ReplaceAll(s.name, "-", "_")) {
			t.Errorf("--%s is set by %s: docs/flags.md promises NETTRAP_ and the flag's name", s.name, s.env)
		}
	}
	if envName("help") != "" || envName("version") != "" {
		t.Error("help or version has a variable")
	}
}
