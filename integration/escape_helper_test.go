package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nettrap/nettrap/integration/internal/harness"
	"github.com/nettrap/nettrap/integration/internal/lab"
)

// The escape tests (escape_*_test.go) run in the lab (internal/lab): the
// program runs in the inside namespace, whose only way out is a veth to
// the outside namespace, which records what arrives. Each case first runs
// unguarded and must reach the outside (else the case proves nothing), then
// under nettrap, where nothing may arrive: a sentinel sent after the run
// arrives alone.

// labEnv is a lab with its programs.
type labEnv struct {
	*lab.Lab
	bins lab.Bins
}

func newLabEnv(t *testing.T) labEnv {
	t.Helper()
	bins := lab.Programs(t)
	return labEnv{Lab: lab.New(t), bins: bins}
}

// labRun is the outcome of one program run in the lab.
type labRun struct {
	stdout, stderr string
	code           int
	audit          []harness.AuditRecord // under nettrap with an audit log
}

// run runs argv inside as u and waits for it.
func (e labEnv) run(t *testing.T, u harness.User, argv ...string) labRun {
	t.Helper()
	stdout, stderr, code := runAs(t, u, filepath.Dir(e.bins.Nettrap), e.Run, argv...)
	return labRun{stdout: stdout, stderr: stderr, code: code}
}

// runAs runs argv as u in dir with run (exec.Cmd.Run, or a Lab's Run,
// which starts it in the lab) and returns its output and exit code; a
// program that did not exit fails t.
func runAs(t *testing.T, u harness.User, dir string, run func(*exec.Cmd) error, argv ...string) (stdout, stderr string, code int) {
	t.Helper()
	if u == harness.AsNobody {
		lab.RequireRoot(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), harness.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if u == harness.AsNobody {
		lab.AsNobody(cmd)
	}
	err := run(cmd)
	if code = harness.ExitCode(err); code < 0 {
		t.Fatalf("%s: %v\nstderr: %s", strings.Join(argv, " "), err, errb.String())
	}
	return lab.DropNotice(out.String()), lab.DropNotice(errb.String()), code
}

// guarded runs argv inside under nettrap (with an audit log) as u.
func (e labEnv) guarded(t *testing.T, u harness.User, flags []string, argv ...string) labRun {
	t.Helper()
	log := filepath.Join(harness.OpenTempDir(t, "nettrap-lab-audit-", 0o777), "audit.jsonl")
	full := append(append([]string{e.bins.Nettrap, "--audit-log", log}, flags...), "--")
	r := e.run(t, u, append(full, argv...)...)
	if _, err := os.Stat(log); err == nil {
		r.audit = harness.ReadAudit(t, log)
	}
	return r
}

// escapeeOut is escapee's JSON line.
type escapeeOut struct {
	Op    string `json:"op"`
	OK    bool   `json:"ok"`
	Errno string `json:"errno"`
	Err   string `json:"err"`
}

func parseEscapee(t *testing.T, r labRun) escapeeOut {
	t.Helper()
	var o escapeeOut
	if err := json.Unmarshal([]byte(strings.TrimSpace(r.stdout)), &o); err != nil {
		t.Fatalf("escapee printed %q (stderr %q): %v", r.stdout, r.stderr, err)
	}
	return o
}

// mustEscape: the unguarded run did what it tried.
func mustEscape(t *testing.T, r labRun) {
	t.Helper()
	if o := parseEscapee(t, r); !o.OK {
		t.Fatalf("unguarded %s failed (errno %s): %s\nstderr: %s", o.Op, o.Errno, o.Err, r.stderr)
	}
}

// mustBeDenied: under nettrap the attempt failed with EPERM, nettrap
// printed a blocked line containing line, and audited it as class (if
// class is not empty) with a denied decision.
func mustBeDenied(t *testing.T, r labRun, errno, line, class string) {
	t.Helper()
	if got := strings.Fields(strings.TrimSpace(r.stdout)); errno != "" && strings.HasPrefix(r.stdout, "{") {
		if o := parseEscapee(t, r); o.OK || o.Errno != errno {
			t.Errorf("under nettrap: ok=%v errno=%q err=%q, want %s\nstderr: %s", o.OK, o.Errno, o.Err, errno, r.stderr)
		}
	} else if errno != "" && (len(got) == 0 || got[0] != errno) {
		t.Errorf("under nettrap the program printed %q, want %s first\nstderr: %s", r.stdout, errno, r.stderr)
	}
	found := false
	for _, l := range harness.BlockedLines(r.stderr) {
		found = found || strings.Contains(l, line)
	}
	if !found {
		t.Errorf("no blocked line with %q:\n%s", line, r.stderr)
	}
	audited := false
	for _, rec := range r.audit {
		audited = audited || (rec.Decision == "denied" && (class == "" || rec.Class == class))
	}
	if !audited {
		t.Errorf("no denied audit record of class %q: %+v", class, r.audit)
	}
}

// waitTimeout bounds a wait for something that must arrive.
const waitTimeout = 30 * time.Second

// waitRecord waits on l for a record matching pred, failing t if none
// comes.
func waitRecord(t *testing.T, l *lab.Listener, what string, pred func(lab.Record) bool) lab.Record {
	t.Helper()
	r, ok := l.WaitFor(pred, waitTimeout)
	if !ok {
		t.Fatalf("%s never arrived at %s:\n%s", what, l.Addr, l.Dump())
	}
	return r
}

// waitFrame does the same on the capture.
func waitFrame(t *testing.T, e labEnv, what string, pred func(lab.Record) bool) lab.Record {
	t.Helper()
	r, ok := e.WaitFrame(pred, waitTimeout)
	if !ok {
		t.Fatalf("%s never arrived on the outside's veth:\n%s", what, e.DumpFrames())
	}
	return r
}

// noFrameBefore fails t if a captured frame satisfying leak came before
// the first one satisfying sentinel (which must come).
func noFrameBefore(t *testing.T, e labEnv, leak, sentinel func(lab.Record) bool) {
	t.Helper()
	s := waitFrame(t, e, "the sentinel", sentinel)
	for _, f := range e.Frames() {
		if f.Seq > s.Seq {
			break
		}
		if leak(f) {
			t.Errorf("LEAK under nettrap: %s", f)
		}
	}
}

// containing matches records whose data holds marker.
func containing(marker string) func(lab.Record) bool {
	return func(r lab.Record) bool { return r.Contains([]byte(marker)) }
}

// outsideConn is a TCP connection from the test (in the inside namespace)
// to a lab listener, with a dup of its socket to hand to a child, and the
// listener's record of it.
type outsideConn struct {
	net.Conn
	sock  *os.File
	local string
	seq   int
	ln    *lab.Listener
}

// dialOutside connects to ln and waits until ln has recorded the connection.
func (e labEnv) dialOutside(t *testing.T, ln *lab.Listener) *outsideConn {
	t.Helper()
	c, err := e.Dial("tcp", ln.Addr)
	if err != nil {
		t.Fatal(err)
	}
	sock, err := c.(*net.TCPConn).File()
	if err != nil {
		c.Close()
		t.Fatal(err)
	}
	o := &outsideConn{Conn: c, sock: sock, local: c.LocalAddr().String(), ln: ln}
	rec := waitRecord(t, ln, "the connection", func(r lab.Record) bool { return r.Remote.String() == o.local })
	o.seq = rec.Seq
	return o
}

// data is what the outside has received on the connection so far.
func (o *outsideConn) data() string {
	for _, r := range o.ln.Records() {
		if r.Seq == o.seq {
			return string(r.Data)
		}
	}
	return ""
}

// Close closes both the connection and the dup of its socket.
func (o *outsideConn) Close() error {
	o.sock.Close()
	return o.Conn.Close()
}
