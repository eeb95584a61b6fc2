package main

import (
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/procfs"
	"github.com/nettrap/nettrap/run"
	"github.com/nettrap/nettrap/supervisor"
)

func TestUsernsFlag(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want supervisor.UsernsMode
		err  string
	}{
		{"default", []string{"--", "true"}, nil, supervisor.UsernsAuto, ""},
		{"off", []string{"--userns=off", "--", "true"}, nil, supervisor.UsernsOff, ""},
		{"variable", []string{"--", "true"}, map[string]string{"NETTRAP_USERNS": "off"}, supervisor.UsernsOff, ""},
		{"flag wins", []string{"--userns=auto", "--", "true"}, map[string]string{"NETTRAP_USERNS": "off"}, supervisor.UsernsAuto, ""},
		{"bad", []string{"--userns=on", "--", "true"}, nil, 0, `bad --userns "on"`},
		{"bad variable", []string{"--", "true"}, map[string]string{"NETTRAP_USERNS": "no"}, 0, `bad NETTRAP_USERNS "no"`},
		{"sealed with off", []string{"--sealed", "--userns=off", "--", "true"}, nil, 0, "--sealed with --userns=off"},
		{"sealed with the variable", []string{"--sealed", "--", "true"}, map[string]string{"NETTRAP_USERNS": "off"}, 0, "--sealed with NETTRAP_USERNS=off"},
		{"sealed, auto", []string{"--sealed", "--userns=auto", "--", "true"}, nil, supervisor.UsernsAuto, ""},
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
			if cfg.userns != tc.want || cfg.options().Userns != tc.want {
				t.Errorf("userns = %v (run: %v), want %v", cfg.userns, cfg.options().Userns, tc.want)
			}
		})
	}
}

// --sealed with --userns=off is a usage error: status 125.
func TestUsernsOffSealedExit(t *testing.T) {
	_, err := parseConfig([]string{"--sealed", "--userns=off", "--", "true"}, func(string) string { return "" })
	if err == nil {
		t.Fatal("no error")
	}
	if code := exitCode(cantRun("%v", err), nil); code != run.ExitCantRun || run.ExitCantRun != 125 {
		t.Errorf("exit %d, want 125", code)
	}
}

// The inner nettraps get --userns as given.
func TestInnerEnvUserns(t *testing.T) {
	cfg, err := parseConfig([]string{"--userns=off", "--", "go", "test"}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.InnerEnv([]string{"PATH=/bin"}, run.Inner{}); !slices.Contains(got, "NETTRAP_USERNS=off") {
		t.Errorf("inner env %q lacks NETTRAP_USERNS=off", got)
	}
}

// nettrap version names what the command gets here.
func TestVersionSaysUserns(t *testing.T) {
	var b strings.Builder
	printVersion(&b, supervisor.EngineAuto, supervisor.UsernsOff)
	want := "user namespace: not needed"
	if admin, _ := procfs.HasCapability(procfs.SelfPath("status"), "CapEff", unix.CAP_SYS_ADMIN); admin {
		want = "user namespace: off (--userns=off)"
	}
	if !strings.Contains(b.String(), want) {
		t.Errorf("nettrap version lacks %q:\n%s", want, b.String())
	}
}
