package integration

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nettrap/nettrap/integration/internal/fakehost"
	"github.com/nettrap/nettrap/integration/internal/harness"
	"github.com/nettrap/nettrap/integration/internal/lab"
	"github.com/nettrap/nettrap/integration/internal/sandbox"
	"github.com/nettrap/nettrap/procfs"
)

// kernelDest is the kernel engine test's fake host, on UDP and TCP.
const kernelDest = "203.0.113.7:4443"

// TestEngineKernel: under --engine=kernel, a send or a connect to
// loopback passes in the kernel (nettrap never hears of it), and so does
// a unix connect but to a path named as a resolver socket; a send, a
// Fast Open or a connect to another host is held and denied, with the
// caller's stack on nettrap's line, and a tree that moves itself to
// nettrap's cgroup by the host's path stays in its own: its next send
// is held all the same.
func TestEngineKernel(t *testing.T) {
	lab.OwnListener(t) // the notify engine half
	sandbox.Require(t)
	needKernelEngine(t)
	b := lab.Programs(t)
	eps := fakehost.Both(kernelDest)
	h := fakehost.Start(t, eps...)
	run := func(argv ...string) harness.Run {
		t.Helper()
		return engineRun(t, harness.AsSelf, engineEnv(), append([]string{b.Plain, "--engine=kernel", "--"}, argv...)...)
	}
	t.Run("version", func(t *testing.T) {
		r := engineRun(t, harness.AsSelf, engineEnv("NETTRAP_ENGINE=kernel"), b.Plain, "version")
		if line := harness.LinesWithPrefix(r.Stdout, "engine: "); r.Code != 0 || len(line) != 1 || !strings.HasPrefix(line[0], "engine: kernel") {
			t.Errorf("NETTRAP_ENGINE=kernel nettrap version: exit %d, engine lines %q, want one naming kernel", r.Code, line)
		}
	})
	t.Run("loopback", func(t *testing.T) {
		r := run(b.Victim, "udp-sendto", "127.0.0.1:9")
		if v := parseVictim(t, []byte(r.Stdout), r.Stderr); r.Code != 0 || !v.OK || len(harness.BlockedLines(r.Stderr)) != 0 {
			t.Errorf("loopback send: exit %d, ok=%v errno=%q\nstderr: %s", r.Code, v.OK, v.Errno, r.Stderr)
		}
	})
	t.Run("loopback connect", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		r := run(b.Victim, "tcp-connect", ln.Addr().String())
		if v := parseVictim(t, []byte(r.Stdout), r.Stderr); r.Code != 0 || !v.OK || len(harness.BlockedLines(r.Stderr)) != 0 {
			t.Errorf("loopback connect: exit %d, ok=%v errno=%q\nstderr: %s", r.Code, v.OK, v.Errno, r.Stderr)
		}
	})
	t.Run("unix", func(t *testing.T) { kernelUnix(t, b) })
	for _, op := range []string{"udp-sendto", "udp-sendmsg", "tcp-fastopen", "tcp-connect"} {
		t.Run(op, func(t *testing.T) {
			mark := h.Mark()
			r := run(b.Victim, op, kernelDest)
			v := parseVictim(t, []byte(r.Stdout), r.Stderr)
			lines := harness.BlockedLines(r.Stderr)
			if r.Code != 1 || v.OK || v.Errno != "EPERM" || len(lines) != 1 || !strings.Contains(lines[0], kernelDest) || !strings.Contains(lines[0], " at ") {
				t.Errorf("%s to %s: exit %d, ok=%v errno=%q, blocked %q; want 1, EPERM, one line with the caller's place\nstderr: %s",
					op, kernelDest, r.Code, v.OK, v.Errno, lines, r.Stderr)
			}
			harness.AssertNothingArrived(t, h, mark, eps...)
		})
	}
	t.Run("cgroup escape", func(t *testing.T) {
		own, err := procfs.OwnCgroup2()
		if err != nil {
			t.Fatal(err)
		}
		mark := h.Mark()
		// nettrap's cgroup is this test's: the host's path of it.
		script := `echo $$ > "$1/cgroup.procs"; echo "wrote $?" >&2; grep '^0::' /proc/self/cgroup >&2; exec "$2" udp-sendto "$3"`
		r := run("/bin/sh", "-c", script, "sh", own, b.Victim, kernelDest)
		v := parseVictim(t, []byte(r.Stdout), r.Stderr)
		if v.OK || v.Errno != "EPERM" || len(harness.BlockedLines(r.Stderr)) != 1 {
			t.Errorf("send after a move to %s: ok=%v errno=%q; want EPERM, blocked\nstderr: %s", own, v.OK, v.Errno, r.Stderr)
		}
		// Its cgroup namespace's root is its own cgroup: still there.
		if !strings.Contains(r.Stderr, "\n0::/\n") {
			t.Errorf("the tree left its cgroup\nstderr: %s", r.Stderr)
		}
		harness.AssertNothingArrived(t, h, mark, eps...)
	})
}

// needKernelEngine skips t where the kernel engine cannot run: not root,
// or a kernel whose cgroup programs cannot hold a call (Debian's 6.1 and
// 6.12) or that has no BTF, which is the kernel's, not the machine's
// setup. Any other reason fails t under CI=true.
func needKernelEngine(t *testing.T) {
	t.Helper()
	err := lab.KernelEngine()
	switch {
	case err == nil:
		return
	case os.Geteuid() != 0, strings.Contains(err.Error(), "cannot hold a call"), strings.Contains(err.Error(), "BTF"):
		t.Skipf("no kernel engine here: %v", err)
	case os.Getenv("CI") == "true":
		t.Fatalf("no kernel engine here (CI=true, so this is fatal): %v", err)
	}
	t.Skipf("no kernel engine here: %v", err)
}

// kernelUnix: connect is the kernel's under this engine, and so is a
// unix one. A path named as a resolver socket is (the unix programs hold
// it): here one of the test's own, connected to; a relative "socket" in
// the working directory, which cannot be told from nscd's, is denied
// as the DNS class, with the caller's place. Any other path passes.
func kernelUnix(t *testing.T, b lab.Bins) {
	dir := t.TempDir()
	for _, name := range []string{"socket", "other.sock"} {
		ln, err := net.Listen("unix", filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
	}
	for _, c := range []struct {
		path string
		ok   bool
	}{{filepath.Join(dir, "socket"), true}, {filepath.Join(dir, "other.sock"), true}, {"socket", false}} {
		r := harness.RunIn(t, dir, engineEnv(), b.Plain, "--engine=kernel", "--", b.Victim, "unix-path", c.path)
		v := parseVictim(t, []byte(r.Stdout), r.Stderr)
		lines := harness.BlockedLines(r.Stderr)
		switch {
		case c.ok && (r.Code != 0 || !v.OK || len(lines) != 0):
			t.Errorf("unix connect to %s: exit %d, ok=%v errno=%q, blocked %q; want it connected\nstderr: %s", c.path, r.Code, v.OK, v.Errno, lines, r.Stderr)
		case !c.ok && (r.Code != 1 || v.Errno != "EPERM" || len(lines) != 1 || !strings.Contains(lines[0], "(dns)") || !strings.Contains(lines[0], " at ")):
			t.Errorf("unix connect to %s: exit %d, errno=%q, blocked %q; want EPERM, one DNS line with the caller's place\nstderr: %s", c.path, r.Code, v.Errno, lines, r.Stderr)
		}
	}
}
