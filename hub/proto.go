package hub

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/nettrap/nettrap/audit"
	"github.com/nettrap/nettrap/guard"
)

// Operations.
const (
	opRegister  = "register"
	opChallenge = "challenge"
	opConfirm   = "confirm"
	opOK        = "ok"
	opError     = "error"
	opRecord    = "record"
	opBegin     = "begin" // outer to inner, and the inner's answer: who
	opEnd       = "end"   // outer to inner: the call's reports
	opEnded     = "ended" // inner to outer: reported, output let go
)

// maxLine bounds one message: a verdict carries a record per destination
// of a sendmmsg (at most 1024).
const maxLine = 4 << 20

// Report is one audited attempt of a call and its message line.
type Report struct {
	Record audit.Record `json:"record"`
	Line   string       `json:"line,omitempty"`
}

// message is every message of the protocol; op says which fields count.
type message struct {
	Op      string        `json:"op"`
	ID      uint64        `json:"id,omitempty"`
	Package string        `json:"package,omitempty"`
	Argv0   string        `json:"argv0,omitempty"`
	Error   string        `json:"error,omitempty"`
	Nonce   string        `json:"nonce,omitempty"`
	Record  *audit.Record `json:"record,omitempty"`
	Who     *guard.Who    `json:"who,omitempty"`
	Reports []Report      `json:"reports,omitempty"`
}

// errProtocol wraps every malformed or unexpected message.
var errProtocol = errors.New("hub protocol error")

// conn reads and writes messages; writes may come from many goroutines.
type conn struct {
	rw  io.ReadWriteCloser
	r   *bufio.Reader
	wmu sync.Mutex
}

func newConn(rw io.ReadWriteCloser) *conn {
	return &conn{rw: rw, r: bufio.NewReaderSize(rw, 64<<10)}
}

func (c *conn) send(m message) error {
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode %s: %w", m.Op, err)
	}
	b = append(b, '\n')
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if _, err := c.rw.Write(b); err != nil {
		return fmt.Errorf("send %s: %w", m.Op, err)
	}
	return nil
}

// recv reads one message. io.EOF means the peer closed between messages.
func (c *conn) recv() (message, error) {
	var m message
	line, err := c.readLine()
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(line, &m); err != nil {
		return m, fmt.Errorf("%w: %v", errProtocol, err)
	}
	if m.Op == "" {
		return m, fmt.Errorf("%w: message without op", errProtocol)
	}
	return m, nil
}

func (c *conn) readLine() ([]byte, error) {
	var line []byte
	for {
		part, isPrefix, err := c.r.ReadLine()
		if err != nil {
			if err == io.EOF && len(line) > 0 {
				return nil, fmt.Errorf("%w: truncated message", errProtocol)
			}
			return nil, err
		}
		line = append(line, part...)
		if len(line) > maxLine {
			return nil, fmt.Errorf("%w: message longer than %d bytes", errProtocol, maxLine)
		}
		if !isPrefix {
			return line, nil
		}
	}
}

func (c *conn) close() error { return c.rw.Close() }
