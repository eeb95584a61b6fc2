package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/nettrap/nettrap/run"
	"github.com/nettrap/nettrap/supervisor"
)

// --engine and NETTRAP_ENGINE reach the run; the flag wins; a bad value
// names what the user wrote.
func TestEngineSetting(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  []string
		want supervisor.EngineMode
		err  string
	}{
		{[]string{"--", "true"}, nil, supervisor.EngineAuto, ""},
		{[]string{"--engine=ptrace", "--", "true"}, nil, supervisor.EnginePtraceOnly, ""},
		{[]string{"--engine", "notify", "--", "go", "test"}, nil, supervisor.EngineNotifyOnly, ""},
		{[]string{"--", "true"}, []string{"NETTRAP_ENGINE", "ptrace"}, supervisor.EnginePtraceOnly, ""},
		{[]string{"--engine=auto", "--", "true"}, []string{"NETTRAP_ENGINE", "ptrace"}, supervisor.EngineAuto, ""},
		{[]string{"--engine=strace", "--", "true"}, nil, 0, `bad --engine "strace": want auto, notify, ptrace or kernel`},
		{[]string{"--", "true"}, []string{"NETTRAP_ENGINE", "PTRACE"}, 0, `bad NETTRAP_ENGINE "PTRACE"`},
		{[]string{"--engine=ptrace", "--emulate=off", "--", "true"}, nil, supervisor.EnginePtraceOnly, ""},
		{[]string{"--engine=notify", "--sealed", "--", "true"}, nil, supervisor.EngineNotifyOnly, ""},
		{[]string{"--engine=ptrace", "--sealed", "--", "true"}, nil, supervisor.EnginePtraceOnly, ""},
		{[]string{"--engine=kernel", "--", "true"}, nil, supervisor.EngineKernelOnly, ""},
		{[]string{"--engine=kernel", "--emulate=off", "--", "true"}, nil, supervisor.EngineKernelOnly, ""},
		{[]string{"--", "true"}, []string{"NETTRAP_ENGINE", "kernel"}, supervisor.EngineKernelOnly, ""},
		{[]string{"--engine=kernel", "--sealed", "--", "true"}, nil, 0, "--sealed with --engine=kernel: sealed mode checks each allowed call's peer"},
		{[]string{"--sealed", "--", "true"}, []string{"NETTRAP_ENGINE", "kernel"}, 0, "--sealed with NETTRAP_ENGINE=kernel"},
		{[]string{"--engine=kernel", "--userns=off", "--", "true"}, nil, 0, "--engine=kernel with --userns=off: the command would keep CAP_NET_ADMIN"},
	} {
		cfg, err := parseConfig(tc.args, env(tc.env...))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q %q: error %v, want %q", tc.args, tc.env, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q %q: %v", tc.args, tc.env, err)
			continue
		}
		if o := cfg.options(); o.Engine != tc.want {
			t.Errorf("%q %q: engine %v, want %v", tc.args, tc.env, o.Engine, tc.want)
		}
	}
}

// The nettraps of go test -exec get the engine as given, or the one the
// outer chose for them.
func TestInnerEnvEngine(t *testing.T) {
	cfg, err := parseConfig([]string{"--engine=notify", "--", "go", "test"}, env())
	if err != nil {
		t.Fatal(err)
	}
	base := []string{"PATH=/bin", "NETTRAP_ENGINE=ptrace"}
	if got := cfg.InnerEnv(base, run.Inner{}); !slices.Contains(got, "NETTRAP_ENGINE=notify") || slices.Contains(got, "NETTRAP_ENGINE=ptrace") {
		t.Errorf("--engine=notify: inner env %q, want NETTRAP_ENGINE=notify only", got)
	}
	if cfg, err = parseConfig([]string{"--", "go", "test"}, env()); err != nil {
		t.Fatal(err)
	}
	if got := cfg.InnerEnv(base, run.Inner{Engine: "ptrace"}); !slices.Contains(got, "NETTRAP_ENGINE=ptrace") || slices.Contains(got, "NETTRAP_ENGINE=auto") {
		t.Errorf("auto fallen back to ptrace: inner env %q, want NETTRAP_ENGINE=ptrace", got)
	}
}

// nettrap version, and --version, honour --engine and NETTRAP_ENGINE,
// and refuse a bad one; nothing else is checked.
func TestVersionEngineSetting(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  []string
		want supervisor.EngineMode
	}{
		{[]string{"--version"}, nil, supervisor.EngineAuto},
		{[]string{"--engine=ptrace", "--version"}, nil, supervisor.EnginePtraceOnly},
		{[]string{"--version", "--engine=notify"}, []string{"NETTRAP_ENGINE", "ptrace"}, supervisor.EngineNotifyOnly},
		{[]string{"--version"}, []string{"NETTRAP_ENGINE", "ptrace", "NETTRAP_MODE", "bogus"}, supervisor.EnginePtraceOnly},
	} {
		cfg, err := parseConfig(tc.args, env(tc.env...))
		if err != nil || !cfg.version || cfg.engine != tc.want {
			t.Errorf("%q %q: %+v, %v; want version with engine %v", tc.args, tc.env, cfg, err, tc.want)
		}
	}
	err := cli([]string{"version", "--engine=bogus"}, env())
	if code := exitCode(err, nil); code != run.ExitCantRun || !strings.Contains(err.Error(), `bad --engine "bogus"`) {
		t.Errorf("nettrap version --engine=bogus: %d %v, want 125 naming the flag", code, err)
	}
	_, err = parseConfig([]string{"--version"}, env("NETTRAP_ENGINE", "bogus"))
	if err == nil || !strings.Contains(err.Error(), `bad NETTRAP_ENGINE "bogus"`) {
		t.Errorf("--version with NETTRAP_ENGINE=bogus: %v, want an error naming the variable", err)
	}
}

// The version's engine line: the engine and why, or none and why not.
func TestEngineLine(t *testing.T) {
	if got := engineLine(supervisor.EngineChoice{}, errors.New("no way")); got != "engine: none (no way)" {
		t.Errorf("engineLine(error) = %q", got)
	}
	noPtrace := fmt.Errorf("%w: %w: kernel.yama.ptrace_scope is 3", supervisor.ErrUnsupported, supervisor.ErrNoPtrace)
	if got := engineLine(supervisor.EngineChoice{}, noPtrace); got != "engine: none (the ptrace engine is unavailable: kernel.yama.ptrace_scope is 3)" {
		t.Errorf("engineLine(ptrace refused, notification fine) = %q", got)
	}
	busy := supervisor.EngineChoice{NotifyErr: errors.New("busy")}
	if got := engineLine(busy, fmt.Errorf("%w: busy", supervisor.ErrUnsupported)); got != "engine: none (seccomp user notification unavailable: busy)" {
		t.Errorf("engineLine(notification refused) = %q", got)
	}
	c := supervisor.EngineChoice{Engine: supervisor.EngineNotify}
	if got := engineLine(c, nil); got != "engine: "+c.String() || !strings.HasPrefix(got, "engine: notify") {
		t.Errorf("engineLine(notify) = %q", got)
	}
	for _, mode := range []supervisor.EngineMode{supervisor.EngineAuto, supervisor.EngineNotifyOnly, supervisor.EnginePtraceOnly} {
		var b strings.Builder
		printVersion(&b, mode, supervisor.UsernsAuto)
		want := engineLine(supervisor.ChooseEngine(mode))
		if !strings.Contains(b.String(), "\n"+want+"\n") || !strings.Contains(b.String(), "confine here") {
			t.Errorf("mode %v: version lacks %q:\n%s", mode, want, b.String())
		}
		if mode == supervisor.EnginePtraceOnly && !strings.HasPrefix(want, "engine: ptrace") && !strings.HasPrefix(want, "engine: none (") {
			t.Errorf("--engine=ptrace: %q", want)
		}
	}
}
