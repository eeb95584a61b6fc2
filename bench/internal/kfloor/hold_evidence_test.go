package main

// The evidence a held call leaves for nettrap's attribution: the caller's
// stack and goroutine chain from the registers the program reports, and
// the order of what the caller wrote before its call.

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/ancestry"
	"github.com/nettrap/nettrap/callstack"
	"github.com/nettrap/nettrap/cgroupbpf"
)

// TestHoldAttribution: the held caller's registers, which the program
// reads (bpf_task_pt_regs) since a cgroup program may not call
// bpf_get_stack, are enough for nettrap's unwinder: from them and the
// caller's memory, read while it is held, it names the function that
// made the call.
func TestHoldAttribution(t *testing.T) {
	needRoot(t)
	var frames []string
	var unwindErr error
	out := runDenying(t, opSend, func(h cgroupbpf.Held) { frames, unwindErr = unwindHeld(h) })
	if unwindErr != nil {
		t.Fatalf("unwinding the held caller: %v", unwindErr)
	}
	t.Logf("victim: %s; the held caller's frames: %v", out, frames)
	if !slices.Contains(frames, victimFunc) || !strings.HasPrefix(out, unix.EPERM.Error()) {
		t.Errorf("want %s among the held caller's frames %v, and the call denied: %s", victimFunc, frames, out)
	}
}

// TestHoldAncestry: from the held caller's stack pointer, which the
// program reports, nettrap's ancestry reader finds the calling goroutine
// and the go statement that started it, in the process that keeps
// running around the held thread, as the notify engine's attribution
// does for a thread held in its listener.
func TestHoldAncestry(t *testing.T) {
	needRoot(t)
	var chain *ancestry.Chain
	var readErr error
	out := runDenying(t, opGo, func(h cgroupbpf.Held) { chain, readErr = chainOf(h) })
	if readErr != nil {
		t.Fatalf("reading the held caller's ancestry: %v", readErr)
	}
	t.Logf("victim: %s; goroutine %d started at %s:%d (%s), %d creators, end %q",
		out, chain.Goroutine, chain.GoStatement.File, chain.GoStatement.Line, chain.GoStatement.Func, len(chain.Creators), chain.End)
	want := strings.TrimSuffix(victimFunc, "heldVictim") + "goroutineVictim"
	if chain.GoStatement.Func != want || len(chain.Creators) == 0 || chain.Creators[0].ID != 1 || out != unix.EPERM.Error() {
		t.Errorf("want the go statement in %s, made by the main goroutine (1), and the call denied; got %+v, victim %q", want, chain, out)
	}
}

// runDenying runs the victim's op under a holder that calls look on each
// held call, while the caller is held, and denies it; it returns what the
// victim printed. look's writes are seen after it returns: the holder has
// stopped by then.
func runDenying(t *testing.T, op string, look func(cgroupbpf.Held)) string {
	t.Helper()
	dir, stop := startHolder(t, testDeadline, func(h cgroupbpf.Held) (bool, bool) {
		look(h)
		return false, true
	})
	out := runHeld(t, dir, op)
	stop()
	return out
}

// heldTable is the held caller's executable's table and load bias.
func heldTable(h cgroupbpf.Held) (*callstack.Table, uint64, error) {
	tab, err := callstack.Open(fmt.Sprintf("/proc/%d/exe", h.PID))
	if err != nil {
		return nil, 0, err
	}
	bias, err := tab.Bias(h.PID)
	return tab, bias, err
}

// chainOf reads the held caller's goroutine chain with package ancestry.
func chainOf(h cgroupbpf.Held) (*ancestry.Chain, error) {
	tab, bias, err := heldTable(h)
	if err != nil {
		return nil, err
	}
	l, err := ancestry.Open(tab)
	if err != nil {
		return nil, err
	}
	return l.Read(callstack.ProcessMemory(h.TID), bias, h.SP)
}

// victimFunc is heldVictim as the runtime names it (this test binary's
// package main has its import path).
const victimFunc = "github.com/nettrap/nettrap/bench/internal/kfloor.heldVictim"

// unwindHeld unwinds the held caller h with callstack, as nettrap's
// engines do from /proc/TID/syscall, and returns its frames' functions.
func unwindHeld(h cgroupbpf.Held) ([]string, error) {
	tab, bias, err := heldTable(h)
	if err != nil {
		return nil, err
	}
	regs := callstack.Regs{PC: h.PC, SP: h.SP, FP: h.FP}
	if runtime.GOARCH == "arm64" {
		regs.LR = h.LR
	}
	st := tab.Unwind(callstack.ProcessMemory(h.TID), bias, regs)
	var fs []string
	for _, f := range st.Frames {
		fs = append(fs, f.Func)
	}
	return fs, nil
}

// TestHoldMarkerOrder: what the caller wrote before its call is in
// nettrap's pipe by the time the held call is reported, as under the
// notify engine: a decider that reads the caller's output up to that
// point, as nettrap reads a test binary's test2json stream, sees the
// line that marks the call every time, with no race. The control writes
// each line after its call: then the decider never sees it in time.
func TestHoldMarkerOrder(t *testing.T) {
	needRoot(t)
	for _, c := range []struct {
		op                    string
		wantUnreach, wantPerm int
	}{{opMark, markSends, 0}, {opMarkAfter, 0, markSends}} {
		t.Run(c.op, func(t *testing.T) {
			out := &markReader{}
			dir, stop := startHolder(t, testDeadline, func(h cgroupbpf.Held) (bool, bool) {
				return out.seen(fmt.Sprintf("mark %d", out.calls())), true
			})
			defer stop()
			last := runMarked(t, dir, c.op, out)
			var unreach, eperm int
			if _, err := fmt.Sscanf(last, "unreach %d eperm %d", &unreach, &eperm); err != nil {
				t.Fatalf("victim's last line %q: %v", last, err)
			}
			if unreach != c.wantUnreach || eperm != c.wantPerm {
				t.Errorf("%d sends let through, %d refused; want %d, %d", unreach, eperm, c.wantUnreach, c.wantPerm)
			}
		})
	}
}

// markReader is the victim's stdout as the decider reads it: every line
// already written, read without waiting for more.
type markReader struct {
	mu    sync.Mutex
	r     *os.File
	buf   []byte
	lines []string
	n     int // calls decided
}

// seen reads what the pipe holds now and says whether line is among the
// lines read so far; each call counts one decided call.
func (m *markReader) seen(line string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.n++
	chunk := make([]byte, 4096)
	for {
		m.r.SetReadDeadline(time.Now().Add(time.Millisecond))
		k, err := m.r.Read(chunk)
		m.buf = append(m.buf, chunk[:k]...)
		if err != nil {
			break
		}
	}
	for {
		i := bytes.IndexByte(m.buf, '\n')
		if i < 0 {
			break
		}
		m.lines = append(m.lines, string(m.buf[:i]))
		m.buf = m.buf[i+1:]
	}
	return slices.Contains(m.lines, line)
}

// calls is how many calls were decided before this one.
func (m *markReader) calls() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.n
}

// runMarked runs the victim's op with its stdout on a pipe that m reads,
// and returns its last line.
func runMarked(t *testing.T, dir, op string, m *markReader) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	m.mu.Lock()
	m.r = r
	m.mu.Unlock()
	cmd := heldCmd(t, dir, exe, victimArg, heldArg, op)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = w, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("victim %s: %v\n%s", op, err, stderr.String())
	}
	m.seen("") // the rest
	m.mu.Lock()
	defer m.mu.Unlock()
	r.Close()
	if len(m.lines) == 0 {
		t.Fatal("the victim printed nothing")
	}
	return m.lines[len(m.lines)-1]
}
