// Command forgehub plays a confined process that forges an inner nettrap,
// as issue 8 reproduced it: it connects to the hub of the nettrap that
// confines it, hands the socket to a child and execs the real nettrap. The
// child waits for that exec, registers on the socket and answers "marked"
// for every call; a process under the exec'd nettrap then dials. Before the
// hub checked who writes on its sockets, the outer took the child's answers
// for the registered nettrap's.
//
// It exists only for nettrap's integration tests, which run it inside a
// private network namespace where the destination is on lo.
//
//	forgehub start NETTRAP PORT   connect, start `answer`, exec NETTRAP -- forgehub dial PORT
//	forgehub answer               (fd 3 the socket, fd 4 a pipe) register and answer
//	forgehub dial PORT            wait for the answerer's outcome, dial 203.0.113.7:PORT
//
// FORGE_FIFO names the FIFO the answerer writes its outcome to.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"syscall"
	"time"
)

const host = "203.0.113.7"

func main() {
	var err error
	switch {
	case len(os.Args) == 4 && os.Args[1] == "start":
		err = start(os.Args[2], os.Args[3])
	case len(os.Args) == 2 && os.Args[1] == "answer":
		err = answer()
	case len(os.Args) == 3 && os.Args[1] == "dial":
		err = dial(os.Args[2])
	default:
		err = errors.New("usage: forgehub start NETTRAP PORT | answer | dial PORT")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "forgehub:", err)
		os.Exit(1)
	}
}

func start(nettrap, port string) error {
	nc, err := net.Dial("unix", os.Getenv("NETTRAP_HUB"))
	if err != nil {
		return err
	}
	sock, err := nc.(*net.UnixConn).File()
	if err != nil {
		return err
	}
	// The answerer sees EOF on r once this process has exec'd: w is
	// close-on-exec, and the answerer holds no copy of it.
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	child := exec.Command(self, "answer")
	child.ExtraFiles = []*os.File{sock, r}
	child.Stdout, child.Stderr = os.Stderr, os.Stderr
	if err := child.Start(); err != nil {
		return err
	}
	r.Close()
	_ = w // closed by the exec
	return syscall.Exec(nettrap, []string{"nettrap", "--", self, "dial", port}, os.Environ())
}

type message struct {
	Op    string `json:"op"`
	ID    uint64 `json:"id,omitempty"`
	Nonce string `json:"nonce,omitempty"`
	Error string `json:"error,omitempty"`
	Who   *who   `json:"who,omitempty"`
}

// who is guard.Who as the hub carries it.
type who struct {
	Marked  bool
	Package string
	Test    string
}

func answer() error {
	sock := os.NewFile(3, "hub")
	// The dialer waits on the FIFO: it gets an outcome whatever happens.
	fifo, err := os.OpenFile(os.Getenv("FORGE_FIFO"), os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := io.Copy(io.Discard, os.NewFile(4, "exec")); err != nil {
		fmt.Fprintln(fifo, "error:", err)
		return err
	}
	outcome, rd, err := register(sock)
	if err != nil {
		outcome = "error: " + err.Error()
	}
	fmt.Fprintln(fifo, outcome)
	fifo.Close()
	if outcome != "registered" {
		return nil
	}
	enc := json.NewEncoder(sock)
	for {
		var m message
		if err := rd.Decode(&m); err != nil {
			return nil // the hub closed
		}
		switch m.Op {
		case "begin":
			enc.Encode(message{Op: "begin", ID: m.ID, Who: &who{Marked: true, Package: "example.com/forged", Test: "TestForged"}})
		case "end":
			enc.Encode(message{Op: "ended", ID: m.ID})
		}
	}
}

// register sends register, echoes a challenge, and says how it ended.
func register(sock *os.File) (string, *json.Decoder, error) {
	enc, dec := json.NewEncoder(sock), json.NewDecoder(bufio.NewReader(sock))
	if err := enc.Encode(map[string]string{"op": "register", "package": "example.com/forged", "argv0": "forged.test"}); err != nil {
		return "", nil, err
	}
	var m message
	if err := dec.Decode(&m); err != nil {
		return "refused: connection closed", dec, nil
	}
	if m.Op == "challenge" {
		if err := enc.Encode(message{Op: "confirm", Nonce: m.Nonce}); err != nil {
			return "refused: " + err.Error(), dec, nil
		}
		m = message{}
		if err := dec.Decode(&m); err != nil {
			return "refused: connection closed", dec, nil
		}
	}
	if m.Op == "ok" {
		return "registered", dec, nil
	}
	return "refused: " + m.Op + " " + m.Error, dec, nil
}

func dial(port string) error {
	b, err := os.ReadFile(os.Getenv("FORGE_FIFO"))
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "forgehub: the forged inner: %s", b)
	if err := mustBeLocal(host); err != nil {
		return err
	}
	c, err := net.DialTimeout("tcp", net.JoinHostPort(host, port), 10*time.Second)
	if err != nil {
		fmt.Fprintln(os.Stderr, "forgehub: dial:", err)
		return nil
	}
	defer c.Close()
	_, err = c.Write([]byte("forged"))
	fmt.Fprintln(os.Stderr, "forgehub: dial: connected")
	return err
}

// mustBeLocal refuses a host that is not on this machine: outside the
// integration sandbox nothing may be sent anywhere.
func mustBeLocal(h string) error {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return err
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(net.ParseIP(h)) {
			return nil
		}
	}
	if onlyLoopback() {
		// A network namespace with lo alone (nettrap --sealed gives the
		// command one): nothing can leave it, whatever the address.
		return nil
	}
	return fmt.Errorf("%s is not on this machine: run forgehub only from nettrap's integration tests", h)
}

// onlyLoopback tells whether every interface here is a loopback one.
func onlyLoopback() bool {
	ifs, err := net.Interfaces()
	if err != nil || len(ifs) == 0 {
		return false
	}
	for _, i := range ifs {
		if i.Flags&net.FlagLoopback == 0 {
			return false
		}
	}
	return true
}
