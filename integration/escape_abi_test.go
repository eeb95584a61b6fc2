package integration

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/nettrap/nettrap/integration/internal/harness"
	"github.com/nettrap/nettrap/integration/internal/lab"
)

// holder is a running lab holder program (csrc/holder.c): an unconfined
// process of the test's user with a TCP connection to the outside at fd 3.
type holder struct {
	pid, addr string // its pid and the address of its buffer
	in        io.WriteCloser
	out       *bufio.Reader
	cmd       *exec.Cmd
	conn      func() string // what the outside received on its connection
	seq       int
}

func (e labEnv) startHolder(t *testing.T, u harness.User, ln *lab.Listener) *holder {
	t.Helper()
	oc := e.dialOutside(t, ln)
	defer oc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), harness.Timeout)
	cmd := exec.CommandContext(ctx, e.bins.Holder)
	cmd.ExtraFiles = []*os.File{oc.sock}
	cmd.Stderr = os.Stderr
	if u == harness.AsNobody {
		lab.AsNobody(cmd)
	}
	h := &holder{cmd: cmd, seq: oc.seq, conn: oc.data}
	var err error
	if h.in, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(cmd); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { h.in.Close(); cmd.Wait(); cancel() })
	h.out = bufio.NewReader(stdout)
	line, err := h.out.ReadString('\n')
	if _, serr := fmt.Sscan(line, &h.pid, &h.addr); err != nil || serr != nil {
		t.Fatalf("holder said %q: %v %v", line, err, serr)
	}
	return h
}

// write makes the holder write its buffer to the outside, and waits until
// the outside has it: the holder's own write is the sentinel of its stream.
func (h *holder) write(t *testing.T, ln *lab.Listener) string {
	t.Helper()
	want := len(h.conn()) + 1
	if _, err := io.WriteString(h.in, "go\n"); err != nil {
		t.Fatal(err)
	}
	if line, err := h.out.ReadString('\n'); err != nil || line != "wrote\n" {
		t.Fatalf("holder answered %q: %v", line, err)
	}
	waitRecord(t, ln, "the holder's write", func(r lab.Record) bool {
		return r.Seq == h.seq && len(r.Data) >= want && strings.HasSuffix(string(r.Data), ";")
	})
	return h.conn()
}

const holderIdle = "holder-idle;"

// escape32Line is the 32-bit program's one line: "ok" or "ERRNO step".
func escape32Line(t *testing.T, r labRun) string {
	t.Helper()
	line := strings.TrimSpace(r.stdout)
	if line == "" {
		t.Fatalf("escape32 printed nothing (exit %d)\nstderr: %s", r.code, r.stderr)
	}
	return line
}

// TestEscapeI386CrossProcess: through `int 0x80`, pidfd_getfd took a
// descriptor from another process of the same user, and process_vm_writev
// and ptrace wrote into its memory: a confined process could make an
// unconfined one do its networking. Each is shown reaching the outside
// unguarded (a marker in the holder's TCP stream), then refused under
// nettrap (EPERM, "(i386 ABI)" in the line), where the holder's stream
// carries only its own write.
func TestEscapeI386CrossProcess(t *testing.T) {
	e := newLabEnv(t)
	e.bins.Need32(t)
	ln := e.ListenTCP(t, netip.AddrPortFrom(lab.Outside4, 0))
	cases := []struct {
		op, syscall string
		steal       bool // the marker goes out through the stolen fd, not the holder's write
	}{
		{"pidfd-getfd", "pidfd_getfd", true},
		{"pvw", "process_vm_writev", false},
		{"ptrace-poke", "ptrace", false},
	}
	for _, c := range cases {
		t.Run(c.op, func(t *testing.T) {
			harness.ForUsers(t, []harness.User{harness.AsSelf, harness.AsNobody}, func(t *testing.T, u harness.User) {
				if u == harness.AsNobody {
					lab.RequireRoot(t)
				}
				args := func(h *holder, marker string) []string {
					if c.steal {
						return []string{e.bins.Escape32, c.op, h.pid, "3", marker}
					}
					return []string{e.bins.Escape32, c.op, h.pid, h.addr, marker}
				}
				marker := c.op + " " + u.String() + " unguarded;"
				h := e.startHolder(t, u, ln)
				if line := escape32Line(t, e.run(t, u, args(h, marker)...)); line != "ok" {
					t.Fatalf("unguarded %s: %s", c.op, line)
				}
				want := marker
				if c.steal {
					// Through the stolen descriptor: wait for it first,
					// so that the holder's write is measured after it.
					waitRecord(t, ln, "the write through the stolen fd", func(r lab.Record) bool {
						return r.Seq == h.seq && r.Contains([]byte(marker))
					})
					want = marker + holderIdle
				}
				if got := h.write(t, ln); got != want {
					t.Fatalf("unguarded %s: the outside received %q, want %q", c.op, got, want)
				}

				marker = c.op + " " + u.String() + " guarded;"
				h = e.startHolder(t, u, ln)
				r := e.guarded(t, u, nil, args(h, marker)...)
				mustBeDenied(t, r, "EPERM", c.syscall+" (i386 ABI)", "")
				if got := h.write(t, ln); got != holderIdle {
					t.Errorf("LEAK under nettrap: the outside received %q, want only %q", got, holderIdle)
				}
			})
		})
	}
}

// TestEscapeI386SourceRoute: a 32-bit child sets a source route, through
// the i386 setsockopt, on a UDP socket its confined 64-bit parent then
// sends "to loopback" from: an IPv6 segment routing header (unprivileged)
// or an IPv4 loose source route (CAP_NET_RAW) sends the datagram to the
// outside first. Under nettrap the i386 setsockopt fails (EPERM) and the
// datagram stays on loopback.
func TestEscapeI386SourceRoute(t *testing.T) {
	e := newLabEnv(t)
	e.bins.Need32(t)
	cases := []struct {
		name, dst, op, hop string
		users              []harness.User
	}{
		{"srh", "[::1]:9", "srh", lab.Outside6.String(), []harness.User{harness.AsSelf, harness.AsNobody}},
		{"lsrr", "127.0.0.1:9", "lsrr", lab.Outside4.String(), []harness.User{harness.AsSelf}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			harness.ForUsers(t, c.users, func(t *testing.T, u harness.User) {
				if c.name == "lsrr" {
					lab.RequireRoot(t)
				}
				args := func(marker string) []string {
					return []string{e.bins.Escapee, "udp-after", c.dst, marker, e.bins.Escape32, c.op, "3", c.hop}
				}
				marker := c.name + " " + u.String() + " unguarded"
				r := e.run(t, u, args(marker)...)
				if child, _, _ := strings.Cut(r.stdout, "\n"); child != "ok" {
					t.Fatalf("unguarded: %q\nstderr: %s", r.stdout, r.stderr)
				}
				waitFrame(t, e, "the source-routed datagram", containing(marker))

				marker = c.name + " " + u.String() + " guarded"
				r = e.guarded(t, u, nil, args(marker)...)
				mustBeDenied(t, r, "EPERM", "setsockopt (i386 ABI)", "")
				sentinel := "sentinel after " + c.name + " " + u.String()
				sendSentinelFrame(t, e, sentinel)
				noFrameBefore(t, e, containing(marker), containing(sentinel))
			})
		})
	}
}

// TestI386OrdinaryOptionPasses: the filter decides a 32-bit setsockopt on
// its level and name too; an ordinary option is not denied.
func TestI386OrdinaryOptionPasses(t *testing.T) {
	e := newLabEnv(t)
	e.bins.Need32(t)
	r := e.guarded(t, harness.Unprivileged(), nil, e.bins.Escapee, "udp-after", "127.0.0.1:9", "after reuseaddr",
		e.bins.Escape32, "reuseaddr", "3")
	child, rest, _ := strings.Cut(r.stdout, "\n")
	if child != "ok" || !strings.Contains(rest, `"ok":true`) || len(harness.BlockedLines(r.stderr)) != 0 {
		t.Errorf("i386 SO_REUSEADDR under nettrap: %q\nstderr: %s", r.stdout, r.stderr)
	}
}

// TestEscapeI386AgainstSupervisor: the complete defeat took
// nettrap's own listener with an i386 pidfd_getfd and answered its own
// notifications. Aimed at nettrap itself, every i386 way in is refused by
// nettrap (its line says so), as root and as nobody.
func TestEscapeI386AgainstSupervisor(t *testing.T) {
	e := newLabEnv(t)
	e.bins.Need32(t)
	harness.ForUsers(t, []harness.User{harness.AsSelf, harness.AsNobody}, func(t *testing.T, u harness.User) {
		for _, c := range []struct{ args, syscall string }{
			{"pidfd-getfd ppid 3 x", "pidfd_getfd"},
			{"pidfd-getfd ppid 4 x", "pidfd_getfd"},
			{"pvw ppid 0x400000 x", "process_vm_writev"},
			{"ptrace-poke ppid 0x400000 x", "ptrace"},
		} {
			r := e.guarded(t, u, nil, append([]string{e.bins.Escape32}, strings.Fields(c.args)...)...)
			mustBeDenied(t, r, "EPERM", c.syscall+" (i386 ABI)", "")
		}
	})
}
