package integration

import (
	"strings"
	"testing"

	"github.com/nettrap/nettrap/integration/internal/fakehost"
	"github.com/nettrap/nettrap/integration/internal/harness"
	"github.com/nettrap/nettrap/integration/internal/lab"
	"github.com/nettrap/nettrap/integration/internal/netsem"
	"github.com/nettrap/nettrap/integration/internal/sandbox"
	"github.com/nettrap/nettrap/integration/internal/victimbuild"
)

// The fallback where pidfd_getfd is refused (Docker's default seccomp
// profile without CAP_SYS_PTRACE, Linux before 5.6), outside containers:
// nettrap runs under nopidfd, which refuses pidfd_getfd with EPERM as that
// profile does. The container test (integration/container) runs the same
// under Docker's real profile.

const unavailableNotice = "nettrap: emulation unavailable ("

// TestFallbackVersion: nettrap version says emulation is off, and why.
func TestFallbackVersion(t *testing.T) {
	bins := lab.Programs(t)
	no := netsem.Build(t).NoPidfd
	run := harness.RunIn(t, t.TempDir(), harness.GoEnv(), no, bins.Nettrap, "version")
	if run.Code != 0 || !strings.Contains(run.Stdout, "emulation: off (") || !strings.Contains(run.Stdout, "pidfd_getfd") {
		t.Errorf("exit %d, want 0 and emulation off naming pidfd_getfd:\n%s%s", run.Code, run.Stdout, run.Stderr)
	}
}

// TestFallbackRefusesRequired: --sealed and --emulate=on refuse to run
// (125), naming --cap-add SYS_PTRACE.
func TestFallbackRefusesRequired(t *testing.T) {
	bins := lab.Programs(t)
	no := netsem.Build(t).NoPidfd
	for _, flag := range []string{"--sealed", "--emulate=on"} {
		run := harness.RunIn(t, t.TempDir(), harness.GoEnv(), no, bins.Nettrap, flag, "--", "true")
		if run.Code != 125 || !strings.Contains(run.Stderr, "--cap-add SYS_PTRACE") || !strings.Contains(run.Stderr, flag) {
			t.Errorf("%s: exit %d, want 125 naming %s and --cap-add SYS_PTRACE\nstderr: %s", flag, run.Code, flag, run.Stderr)
		}
	}
}

// TestFallbackDenies: without emulation a connect to an external address
// is still denied. The same victim reaches the fake host unconfined.
func TestFallbackDenies(t *testing.T) {
	sandbox.Require(t)
	bins := lab.Programs(t)
	no := netsem.Build(t).NoPidfd
	victim := victimbuild.Victim(t)
	const addr = "203.0.113.7:3191"
	ep := fakehost.TCP(addr)
	h := fakehost.Start(t, ep)

	mark := h.Mark()
	bare := harness.RunIn(t, t.TempDir(), harness.GoEnv(), victim, "tcp-connect", addr)
	if v := parseVictim(t, []byte(bare.Stdout), bare.Stderr); !v.OK {
		t.Fatalf("unconfined, the connect failed: %+v", v)
	}
	if got, err := h.Arrived(mark, ep, harness.Timeout); err != nil || len(got) == 0 {
		t.Fatalf("unconfined, nothing reached %s (%v): this test could not see a leak", ep, err)
	}

	mark = h.Mark()
	run := harness.RunIn(t, t.TempDir(), harness.GoEnv(), no, bins.Nettrap, "--", victim, "tcp-connect", addr)
	if v := parseVictim(t, []byte(run.Stdout), run.Stderr); v.OK || v.Errno != "EPERM" {
		t.Errorf("under nettrap without emulation: %+v, want EPERM", v)
	}
	blocked := false
	for _, l := range harness.BlockedLines(run.Stderr) {
		blocked = blocked || strings.Contains(l, "connect") && strings.Contains(l, addr+" (external)")
	}
	if run.Code != 1 || !blocked {
		t.Errorf("exit %d, want 1 with the blocked line\nstderr: %s", run.Code, run.Stderr)
	}
	harness.AssertNothingArrived(t, h, mark, ep)
}

// TestFallbackSemantics: with emulation unavailable (--emulate=auto),
// netsem's lines are the bare ones, the blocking connect is the kernel's,
// and nettrap said once that it could not emulate.
func TestFallbackSemantics(t *testing.T) {
	lab.BareUnderOuter(t)
	sandbox.Require(t)
	bins := lab.Programs(t)
	progs := netsem.Build(t)
	fastOpen(t)
	users := []harness.User{harness.AsSelf}
	if harness.Unprivileged() != harness.AsSelf {
		users = append(users, harness.Unprivileged())
	}
	harness.ForUsers(t, users, func(t *testing.T, u harness.User) {
		// The users' runs side by side: netsem's listeners take
		// ephemeral ports, its unix sockets a directory of their own.
		t.Parallel()
		bare := runNetsem(t, u, progs.Netsem)
		got := runNetsem(t, u, progs.NoPidfd, bins.Nettrap, "--", progs.Netsem)
		compareNetsem(t, "auto without pidfd_getfd", bare, got, false)
		if n := strings.Count(got.stderr, unavailableNotice); n != 1 {
			t.Errorf("%d notices %q, want 1:\n%s", n, unavailableNotice, got.stderr)
		}
	})
}
