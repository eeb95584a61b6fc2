package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/nettrap/nettrap/integration/internal/fakehost"
	"github.com/nettrap/nettrap/integration/internal/harness"
	"github.com/nettrap/nettrap/integration/internal/lab"
	"github.com/nettrap/nettrap/integration/internal/sandbox"
	"github.com/nettrap/nettrap/integration/internal/victimbuild"
)

// A subprocess in another language is confined as well: bash's /dev/tcp
// redirection connects with plain connect(2).
func TestNettrapBlocksBashDevTCP(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	h := fakehost.Start(t, fakehost.TCP("203.0.113.7:443"))
	mark := h.Mark()
	run := harness.RunNettrap(t, "--", bash, "-c", "exec 3<>/dev/tcp/203.0.113.7/443 && echo connected")
	if run.Code == 0 || strings.Contains(run.Stdout, "connected") {
		t.Errorf("bash /dev/tcp under nettrap: exit %d, stdout %q", run.Code, run.Stdout)
	}
	if !strings.Contains(run.Stderr, "Operation not permitted") || len(harness.BlockedLines(run.Stderr)) != 1 {
		t.Errorf("want bash's EPERM and one denial line, stderr:\n%s", run.Stderr)
	}
	harness.AssertNothingArrived(t, h, mark, fakehost.TCP("203.0.113.7:443"))
}

const cConnect = `#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
int main(int argc, char **argv) {
	struct sockaddr_in sa = {0};
	sa.sin_family = AF_INET;
	sa.sin_port = htons(80);
	inet_pton(AF_INET, argv[1], &sa.sin_addr);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
		printf("errno=%s\n", strerror(errno));
		return 0;
	}
	printf("connected\n");
	return 0;
}
`

// A C program: no Go runtime, libc's connect.
func TestNettrapBlocksCProgram(t *testing.T) {
	cc, err := exec.LookPath("gcc")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true but no gcc")
		}
		t.Skip("no gcc")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "c.c")
	os.WriteFile(src, []byte(cConnect), 0o644)
	bin := filepath.Join(dir, "cconnect")
	if out, err := exec.Command(cc, "-O1", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	h := fakehost.Start(t, fakehost.TCP("198.51.100.1:80"))
	mark := h.Mark()
	run := harness.RunNettrap(t, "--", bin, "198.51.100.1")
	if strings.TrimSpace(run.Stdout) != "errno=Operation not permitted" {
		t.Errorf("C connect under nettrap printed %q\nstderr: %s", run.Stdout, run.Stderr)
	}
	if lines := harness.BlockedLines(run.Stderr); len(lines) != 1 || !strings.Contains(lines[0], "198.51.100.1:80 (external) by pid") {
		t.Errorf("denial lines %q", lines)
	}
	harness.AssertNothingArrived(t, h, mark, fakehost.TCP("198.51.100.1:80"))
}

// Dialing a listener's [::]:port or 0.0.0.0:port is denied with advice
// naming the opt-in; --allow rules, --allow-unspecified and
// NETTRAP_ALLOW_UNSPECIFIED=1 let it through, each leaving a record
// that names what let it through.
func TestNettrapDeniesUnspecifiedWithAdvice(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:9", "[::]:9"} {
		run, r := confinedVictim(t, nil, "tcp-connect", addr)
		if r.OK || r.Errno != "EPERM" {
			t.Errorf("%s: ok=%v errno=%q, want EPERM", addr, r.OK, r.Errno)
		}
		if !strings.Contains(run.Stderr, "(unspecified)") || !strings.Contains(run.Stderr, "listen on 127.0.0.1:0") ||
			!strings.Contains(run.Stderr, "--allow-unspecified (NETTRAP_ALLOW_UNSPECIFIED=1)") {
			t.Errorf("%s: no advice in stderr:\n%s", addr, run.Stderr)
		}
		log := harness.AuditPath(t)
		_, r = confinedVictim(t, []string{"--audit-log", log, "--allow", "::/128", "--allow", "0.0.0.0/32"}, "tcp-connect", addr)
		if r.Errno == "EPERM" {
			t.Errorf("%s with --allow: still EPERM", addr)
		}
		wantAllowed(t, log, addr, "allowed: --allow ")
		log = harness.AuditPath(t)
		run, r = confinedVictim(t, []string{"--audit-log", log, "--allow-unspecified"}, "tcp-connect", addr)
		if r.Errno == "EPERM" || len(harness.BlockedLines(run.Stderr)) != 0 {
			t.Errorf("%s with --allow-unspecified: errno %q, stderr:\n%s", addr, r.Errno, run.Stderr)
		}
		wantAllowed(t, log, addr, "allowed: --allow-unspecified")
		t.Setenv("NETTRAP_ALLOW_UNSPECIFIED", "1")
		log = harness.AuditPath(t)
		run, r = confinedVictim(t, []string{"--audit-log", log}, "tcp-connect", addr)
		if r.Errno == "EPERM" || len(harness.BlockedLines(run.Stderr)) != 0 {
			t.Errorf("%s with NETTRAP_ALLOW_UNSPECIFIED=1: errno %q, stderr:\n%s", addr, r.Errno, run.Stderr)
		}
		wantAllowed(t, log, addr, "allowed: --allow-unspecified")
		os.Unsetenv("NETTRAP_ALLOW_UNSPECIFIED")
	}
}

// wantAllowed: the audit log at path has one record, of the connect to
// addr allowed with a reason starting reason.
func wantAllowed(t *testing.T, path, addr, reason string) {
	t.Helper()
	recs := harness.ReadAudit(t, path)
	if len(recs) != 1 || recs[0].Decision != "allowed" || recs[0].Class != "unspecified" || !strings.HasPrefix(recs[0].Reason, reason) {
		t.Errorf("%s: audit records %+v, want one of the allowed connect, reason %q…", addr, recs, reason)
	}
}

// DNS over TCP to a resolv.conf nameserver, and the Docker stub resolver:
// denied (--emulate=off) or sent to nettrap's sinkhole, recorded either
// way, and nothing reaches them.
func TestNettrapDeniesDNSVariants(t *testing.T) {
	h := fakehost.Start(t, fakehost.TCP("192.0.2.53:53"), fakehost.UDP("127.0.0.11:53"))
	mark := h.Mark()
	for _, mode := range []string{"off", "auto"} {
		flags := []string{"--emulate=" + mode}
		// The victim sends a probe, not a DNS message: the sinkhole
		// reports a malformed query.
		run, r := confinedVictim(t, flags, "net-dial", "tcp", "192.0.2.53:53")
		want := map[string]string{"off": "connect tcp 192.0.2.53:53 (dns)", "auto": "DNS lookup blocked: (malformed query) via 192.0.2.53:53"}[mode]
		if r.OK != (mode == "auto") || !strings.Contains(run.Stderr, want) {
			t.Errorf("DNS over TCP, emulate=%s: ok=%v, want %q in stderr:\n%s", mode, r.OK, want, run.Stderr)
		}
		run, r = confinedVictim(t, flags, "udp-sendto", "127.0.0.11:53")
		want = map[string]string{"off": "sendto udp 127.0.0.11:53 (dns)", "auto": "DNS lookup blocked: (malformed query) via 127.0.0.11:53"}[mode]
		if r.OK != (mode == "auto") || !strings.Contains(run.Stderr, want) {
			t.Errorf("Docker stub resolver, emulate=%s: ok=%v, want %q in stderr:\n%s", mode, r.OK, want, run.Stderr)
		}
	}
	harness.AssertNothingArrived(t, h, mark, fakehost.TCP("192.0.2.53:53"), fakehost.UDP("127.0.0.11:53"))
}

// localhost by name: found in /etc/hosts, no network query, allowed.
func TestNettrapAllowsLocalhostByName(t *testing.T) {
	ln := listenLoopback(t)
	port := ln.Addr().String()[strings.LastIndex(ln.Addr().String(), ":")+1:]
	run, r := confinedVictim(t, nil, "net-dial", "tcp4", "localhost:"+port)
	mustOK(t, r)
	if len(harness.BlockedLines(run.Stderr)) != 0 {
		t.Errorf("localhost dial produced denials:\n%s", run.Stderr)
	}
}

// Without root: nettrap sets no_new_privs itself, so an unprivileged user
// can confine. Run as nobody (needs root to switch; an unprivileged run of
// this suite covers it by itself).
func TestNettrapAsNobody(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: this whole run is unprivileged already")
	}
	h := fakehost.Start(t, fakehost.TCP("203.0.113.7:443"))
	mark := h.Mark()
	dir := harness.OpenTempDir(t, "nettrap-nobody-", 0o755)
	var bins []string
	for _, src := range []string{harness.Nettrap(t), victimbuild.Victim(t)} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, filepath.Base(src))
		if err := os.WriteFile(dst, b, 0o755); err != nil {
			t.Fatal(err)
		}
		bins = append(bins, dst)
	}
	cmd := exec.Command(bins[0], "--", bins[1], "tcp-connect", "203.0.113.7:443")
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	runOneDenied(t, cmd, "as nobody")
	harness.AssertNothingArrived(t, h, mark, fakehost.TCP("203.0.113.7:443"))
}

// Attaching to one's own child (strace -f, a debugger) is allowed: the child
// is confined too. Attaching to the unconfined parent is not.
func TestNettrapPtrace(t *testing.T) {
	t.Run("child", func(t *testing.T) {
		lab.NotifyOnly(t, "a process has one tracer, and under the ptrace engine that is nettrap: the kernel refuses the parent's attach (EPERM)")
		_, r := confinedVictim(t, nil, "ptrace-child")
		mustOK(t, r)
	})
	run, r := confinedVictim(t, nil, "ptrace-parent")
	if r.OK || r.Errno != "EPERM" || !strings.Contains(run.Stderr, "Outbound network blocked: ptrace") {
		t.Errorf("ptrace of the parent: ok=%v errno=%q\nstderr: %s", r.OK, r.Errno, run.Stderr)
	}
}

// Without a writable temporary directory the hub (which names the tests of
// a go test run inside the command) cannot start: the command is confined
// all the same.
func TestNettrapWithoutTempDir(t *testing.T) {
	sandbox.Require(t)
	h := fakehost.Start(t, fakehost.TCP("203.0.113.7:443"))
	mark := h.Mark()
	cmd := exec.Command(harness.Nettrap(t), "--", victimbuild.Victim(t), "tcp-connect", "203.0.113.7:443")
	cmd.Env = append(os.Environ(), "TMPDIR=/nonexistent/tmp")
	stderr := runOneDenied(t, cmd, "without TMPDIR")
	if !strings.Contains(stderr, "will not name tests") {
		t.Errorf("no warning about the hub:\n%s", stderr)
	}
	harness.AssertNothingArrived(t, h, mark, fakehost.TCP("203.0.113.7:443"))
}

// runOneDenied runs cmd, nettrap confining the victim making one denied
// attempt, and checks what that must give: exit status 1 (the victim exits
// 0 after the denied call), EPERM seen by the victim, one blocked line.
// It returns nettrap's stderr.
func runOneDenied(t *testing.T, cmd *exec.Cmd, what string) string {
	t.Helper()
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 1 {
		t.Fatalf("nettrap %s: %v, want exit status 1 (a denied attempt)\nstderr: %s", what, err, stderr.String())
	}
	r := parseVictim(t, []byte(stdout.String()), stderr.String())
	if r.OK || r.Errno != "EPERM" || len(harness.BlockedLines(stderr.String())) != 1 {
		t.Errorf("%s: ok=%v errno=%q\nstderr: %s", what, r.OK, r.Errno, stderr.String())
	}
	return stderr.String()
}
