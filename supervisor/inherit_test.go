package supervisor_test

import (
	"bytes"
	"io"
	"net"
	"os"
	"strings"
	"testing"
)

// An inherited TCP socket is closed before the command starts, with a
// notice naming it; an inherited pipe passes untouched.
func TestInheritedSocketClosed(t *testing.T) {
	conn, peer, sock := loopbackTCP(t)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()

	// ExtraFiles are inherited without close-on-exec: fd 3 (the socket)
	// and fd 4 (the pipe) in the supervisor, as a shell would leave them.
	cmd, report := supervisorCmd(t, "write-fds", "3", "4")
	cmd.ExtraFiles = []*os.File{sock, pw}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	pw.Close()
	if err != nil {
		t.Fatalf("supervisor role: %v\n%s\nstderr: %s", err, out, stderr.String())
	}
	readReport(t, report)
	expect(t, strings.Fields(string(out)), "EBADF", "ok")
	notice := "closed inherited fd 3, a tcp socket " + conn.LocalAddr().String() + " -> " + conn.RemoteAddr().String()
	if !strings.Contains(stderr.String(), notice) {
		t.Errorf("stderr lacks %q:\n%s", notice, stderr.String())
	}
	if strings.Contains(stderr.String(), "fd 4") {
		t.Errorf("the pipe was reported:\n%s", stderr.String())
	}
	// Every copy of the socket is closed now (the supervisor and victim
	// have exited; ours go here), so the peer reads to EOF: nothing must
	// have come through.
	sock.Close()
	conn.Close()
	got, _ := io.ReadAll(peer)
	if len(got) != 0 {
		t.Errorf("LEAK: the peer received %q through the inherited socket", got)
	}
	if b, _ := io.ReadAll(pr); string(b) != "x" {
		t.Errorf("the pipe carried %q, want %q", b, "x")
	}
}

// A network socket as the command's own stdout cannot be closed: Start
// refuses to run the command.
func TestSocketAsStdoutRefused(t *testing.T) {
	_, _, sock := loopbackTCP(t)
	cmd, _ := supervisorCmd(t, "stdout-socket")
	cmd.ExtraFiles = []*os.File{sock}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 125 {
		t.Fatalf("supervisor role: %v, want exit 125\nstderr: %s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "its stdout would be a tcp socket") {
		t.Errorf("stderr: %s", stderr.String())
	}
}

// loopbackTCP connects a TCP socket to a listener on 127.0.0.1: it returns
// the dialled end, the accepted end, and a descriptor of the dialled end's
// socket to hand on (closing it is idempotent, so a test may close it
// early). All are closed when the test ends.
func loopbackTCP(t *testing.T) (conn, peer net.Conn, sock *os.File) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	conn, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	peer, err = ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { peer.Close() })
	sock, err = conn.(*net.TCPConn).File()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sock.Close() })
	return conn, peer, sock
}
