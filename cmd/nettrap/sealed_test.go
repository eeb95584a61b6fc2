package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/nettrap/nettrap/run"
	"github.com/nettrap/nettrap/supervisor"
)

func TestSealedFlag(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	for _, tc := range []struct {
		name   string
		args   []string
		env    map[string]string
		sealed bool
		err    string
	}{
		{"default", []string{"--", "true"}, nil, false, ""},
		{"flag", []string{"--sealed", "--", "true"}, nil, true, ""},
		{"variable", []string{"--", "true"}, map[string]string{"NETTRAP_SEALED": "1"}, true, ""},
		{"flag wins", []string{"--sealed=false", "--", "true"}, map[string]string{"NETTRAP_SEALED": "1"}, false, ""},
		{"with --allow-test", []string{"--sealed", "--allow-test", "^TestLive$", "--", "true"}, nil, false, "--sealed with --allow-test"},
		{"with NETTRAP_ALLOW_TEST", []string{"--", "true"}, map[string]string{"NETTRAP_SEALED": "1", "NETTRAP_ALLOW_TEST": "^TestLive$"}, false, "NETTRAP_SEALED with NETTRAP_ALLOW_TEST"},
		{"bad variable", []string{"--", "true"}, map[string]string{"NETTRAP_SEALED": "maybe"}, false, "NETTRAP_SEALED"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := parseConfig(tc.args, env(tc.env))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("parseConfig = %v, want an error with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.sealed != tc.sealed {
				t.Errorf("sealed = %v, want %v", cfg.sealed, tc.sealed)
			}
		})
	}
}

// The inner nettraps of `nettrap --sealed -- go test` take their config
// from the environment the outer gives the go command: sealed must reach
// them, and an unsealed run must not pass on a NETTRAP_SEALED of its own
// environment that its command line overrode.
func TestInnerEnvSealed(t *testing.T) {
	base := []string{"PATH=/bin", "NETTRAP_SEALED=1"}
	cfg, err := parseConfig([]string{"--sealed", "--", "go", "test"}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	in := run.Inner{AuditLog: "/tmp/a.jsonl", RunDir: "/tmp/run", ResolvConf: "/etc/resolv.conf"}
	got := cfg.InnerEnv(base[:1], in)
	if !slices.Contains(got, "NETTRAP_SEALED=1") {
		t.Errorf("sealed run: inner env %q lacks NETTRAP_SEALED=1", got)
	}
	cfg.sealed = false
	got = cfg.InnerEnv(base, in)
	for _, kv := range got {
		if strings.HasPrefix(kv, "NETTRAP_SEALED=") {
			t.Errorf("unsealed run passes on %q", kv)
		}
	}
}

// nettrap version says whether allowed calls are emulated here.
func TestVersionSaysEmulation(t *testing.T) {
	var b strings.Builder
	printVersion(&b, supervisor.EngineAuto, supervisor.UsernsAuto)
	out := b.String()
	want := "emulation: on (pidfd_getfd)"
	if supervisor.ProbeEmulation() != nil {
		want = "emulation: off ("
	}
	if !strings.Contains(out, want) {
		t.Errorf("nettrap version lacks %q:\n%s", want, out)
	}
}

// --sealed requires emulation; --emulate takes auto, on, off.
func TestSealedRequiresEmulation(t *testing.T) {
	cfg, err := parseConfig([]string{"--sealed", "--", "true"}, func(string) string { return "" })
	if err != nil || cfg.emulate != supervisor.EmulateOn {
		t.Errorf("--sealed: emulate %v, err %v; want on", cfg.emulate, err)
	}
	_, err = parseConfig([]string{"--sealed", "--emulate=off", "--", "true"}, func(string) string { return "" })
	if err == nil || !strings.Contains(err.Error(), "race-free") {
		t.Errorf("--sealed --emulate=off: err %v, want a refusal", err)
	}
	_, err = parseConfig([]string{"--", "true"}, func(k string) string {
		if k == "NETTRAP_EMULATE" {
			return "sometimes"
		}
		return ""
	})
	if err == nil || !strings.Contains(err.Error(), "NETTRAP_EMULATE") {
		t.Errorf("NETTRAP_EMULATE=sometimes: err %v, want one naming the variable", err)
	}
}
