package ancestry

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/callstack"
)

// noAncestors is the environment of a victim whose runtime keeps no
// creators' stacks, whatever this test binary's GODEBUG (under nettrap,
// tracebackancestors: the victims would inherit it).
const noAncestors = "GODEBUG="

// readVictim runs this test binary as a victim (victimEnv=mode, with
// env), waits for its blocker to block in read, and reads the blocker's
// chain.
func readVictim(t testing.TB, mode string, args []string, env ...string) (*Chain, *callstack.Table) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return readChainOf(t, exe, args, append([]string{victimEnv + "=" + mode}, env...)...)
}

// readChainOf runs exe with args and env, waits for it to say "ready
// FD" and block reading FD, and reads the blocked goroutine's chain.
func readChainOf(t testing.TB, exe string, args []string, env ...string) (*Chain, *callstack.Table) {
	t.Helper()
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	var fd int
	if _, err2 := fmt.Sscanf(line, "ready %d\n", &fd); err != nil || err2 != nil {
		t.Fatalf("victim said %q: %v %v", line, err, err2)
	}
	pid := cmd.Process.Pid
	tid, sc := blocked(t, pid, fd)
	l := openLayout(t, exe)
	tab := l.Table()
	bias, err := tab.Bias(pid)
	if err != nil {
		t.Fatal(err)
	}
	c, err := l.Read(callstack.ProcessMemory(tid), bias, sc.Regs.SP)
	if err != nil {
		t.Fatal(err)
	}
	if b, ok := t.(*testing.B); ok {
		b.ResetTimer()
		for b.Loop() {
			if _, err := l.Read(callstack.ProcessMemory(tid), bias, sc.Regs.SP); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(c.Creators)), "creators")
	}
	return c, tab
}

// openLayout opens exe's table and layout.
func openLayout(t testing.TB, exe string) *Layout {
	t.Helper()
	tab, err := callstack.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	l, err := Open(tab)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// blocked waits for the thread of pid blocked in read(fd).
func blocked(t testing.TB, pid, fd int) (int, callstack.Syscall) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		tasks, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
		for _, e := range tasks {
			tid, _ := strconv.Atoi(e.Name())
			sc, err := callstack.ReadSyscall(tid)
			if err == nil && sc.Nr == unix.SYS_READ && sc.Args[0] == uint64(fd) {
				return tid, sc
			}
		}
	}
	t.Fatalf("no thread of victim %d blocked reading %d", pid, fd)
	return 0, callstack.Syscall{}
}

// funcs names the functions of a creator's stack, short ("creatorA").
func funcs(c Creator) string {
	if c.Stack == nil {
		return "(unknown)"
	}
	var names []string
	for _, f := range c.Stack.Frames {
		names = append(names, f.Func[strings.LastIndexByte(f.Func, '.')+1:])
	}
	return strings.Join(names, " ")
}

// TestReadChain reads the creators of a goroutine blocked in a system
// call: live ones from their stacks now, exited ones only where the
// runtime kept them (tracebackancestors), and the chain says where it
// ends.
func TestReadChain(t *testing.T) {
	t.Run("live", func(t *testing.T) {
		c, _ := readVictim(t, "live", nil, noAncestors)
		if len(c.Creators) < 3 {
			t.Fatalf("creators %+v, end %q: want creatorB, creatorA, main", c.Creators, c.End)
		}
		want := []string{"creatorB", "creatorA", "TestMain"}
		for i, w := range want {
			cr := c.Creators[i]
			if cr.Saved || cr.Stack == nil || !strings.Contains(funcs(cr), w) {
				t.Errorf("creator %d: %s (saved %v), want a live stack with %s", i, funcs(cr), cr.Saved, w)
			}
		}
		if !strings.HasSuffix(c.GoStatement.Func, ".creatorB") || !strings.HasSuffix(c.Creators[0].GoStatement.Func, ".creatorA") {
			t.Errorf("go statements in %q and %q, want creatorB and creatorA", c.GoStatement.Func, c.Creators[0].GoStatement.Func)
		}
		if c.Creators[2].ID != 1 || c.End != "" {
			t.Errorf("the chain ends at goroutine %d (%q), want the main goroutine, 1", c.Creators[2].ID, c.End)
		}
	})
	t.Run("exited", func(t *testing.T) {
		c, _ := readVictim(t, "exited", nil, noAncestors)
		if len(c.Creators) != 0 || !strings.HasSuffix(c.End, "has exited") {
			t.Errorf("creators %+v, end %q: want none, its creator has exited", c.Creators, c.End)
		}
	})
	t.Run("exited/tracebackancestors", func(t *testing.T) {
		c, _ := readVictim(t, "exited", nil, "GODEBUG=tracebackancestors=5")
		if len(c.Creators) < 3 {
			t.Fatalf("creators %+v, end %q: want creatorB, creatorA, main", c.Creators, c.End)
		}
		for i, w := range []string{"creatorB", "creatorA", "TestMain"} {
			cr := c.Creators[i]
			if !cr.Saved || !strings.Contains(funcs(cr), w) {
				t.Errorf("creator %d: %s (saved %v), want the kept stack with %s", i, funcs(cr), cr.Saved, w)
			}
		}
	})
	t.Run("test", func(t *testing.T) {
		c, tab := readVictim(t, "test", []string{"-test.run=^TestAncestryVictim$"}, "GODEBUG=tracebackancestors=5")
		if len(c.Creators) < 3 {
			t.Fatalf("creators %+v, end %q: want creatorB, creatorA, the test", c.Creators, c.End)
		}
		w, _ := tab.Where(c.Creators[2].Stack)
		if !w.EntryIsTest || !strings.HasSuffix(w.Entry, ".TestAncestryVictim") {
			t.Errorf("third creator: %s, entry %q (test %v), want TestAncestryVictim's goroutine", funcs(c.Creators[2]), w.Entry, w.EntryIsTest)
		}
	})
}
