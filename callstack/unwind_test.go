package callstack

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// want is a frame of the main module a test expects, innermost first.
type want struct {
	fn      string // short name
	marker  string // its line: the marker's
	inlined bool
}

func TestUnwindGoroutine(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	checkVictim(t, exe, nil, victimEnv+"=goroutine", "victim_test.go", []want{
		{"callstack.victimInner", "inner", false},
		{"callstack.victimInlined", "inlined", true},
		{"callstack.victimOuter", "outer", false},
		{"callstack.victimGoroutine", "goroutine", false},
		{"callstack.victimStart.gowrap1", "go", false},
	}, "github.com/nettrap/nettrap/callstack.victimGoroutine", false)
}

// TestUnwindOnSyscallInsn unwinds a blocked thread from its pc moved
// back onto its system call instruction, where the kernel puts it for a
// call to restart (arm64, before a ptrace stop): the same frames as
// from the pc after it.
func TestUnwindOnSyscallInsn(t *testing.T) {
	exe, tab := selfExe(t)
	v := startVictim(t, exe, nil, victimEnv+"=goroutine")
	sc, err := ReadSyscall(v.tid)
	if err != nil {
		t.Fatal(err)
	}
	bias, err := tab.Bias(v.pid)
	if err != nil {
		t.Fatal(err)
	}
	after := tab.Unwind(ProcessMemory(v.tid), bias, sc.Regs)
	if !after.Complete {
		t.Fatalf("from /proc: %s", after.Stop)
	}
	n := uint64(2)
	if tab.Arch == ARM64 {
		n = 4
	}
	on := sc.Regs
	on.PC -= n
	if got := tab.syscallInsnAt(on.PC - bias); got != n {
		t.Fatalf("pc %#x: %d bytes of system call instruction before it, want %d", sc.Regs.PC, got, n)
	}
	s := tab.Unwind(ProcessMemory(v.tid), bias, on)
	if !s.Complete || !slices.Equal(s.Frames, after.Frames) {
		t.Errorf("from pc %#x: complete %v (%s):\n%s\nfrom pc %#x:\n%s", on.PC, s.Complete, s.Stop, frameList(s.Frames), sc.Regs.PC, frameList(after.Frames))
	}
	// Nothing moves a pc that is not on one.
	if got := tab.syscallInsnAt(sc.Regs.PC - bias); got != 0 {
		t.Errorf("pc %#x after the system call: %d bytes of system call instruction", sc.Regs.PC, got)
	}
}

func TestUnwindTest(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	checkVictim(t, exe, []string{"-test.run=^TestCallstackVictim$"}, victimEnv+"=test", "victim_test.go", []want{
		{"callstack.victimInner", "inner", false},
		{"callstack.victimInlined", "inlined", true},
		{"callstack.victimOuter", "outer", false},
		{"callstack.TestCallstackVictim", "test", false},
	}, "github.com/nettrap/nettrap/callstack.TestCallstackVictim", true)
}

// TestUnwindNotify unwinds a thread held by a seccomp user
// notification in connect(2), as the notify engine holds one.
func TestUnwindNotify(t *testing.T) {
	skipUnderNettrap(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	v := startVictimIn(t, unix.SYS_CONNECT, exe, nil, victimEnv+"=notify")
	_, _ = checkStack(t, exe, v, "victim_test.go", []want{
		{"callstack.victimConnect", "connect", false},
		{"callstack.TestMain", "notify", false},
	}, "main.main", false)
}

// TestUnwindDial unwinds a thread held in connect(2) under net.Dial:
// through the net package to the caller.
func TestUnwindDial(t *testing.T) {
	skipUnderNettrap(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	v := startVictimIn(t, unix.SYS_CONNECT, exe, nil, victimEnv+"=dial")
	_, s := checkStack(t, exe, v, "victim_test.go", []want{
		{"callstack.victimDial", "dial", false},
		{"callstack.TestMain", "dialmain", false},
	}, "main.main", false)
	if !slices.ContainsFunc(s.Frames, func(f Frame) bool { return f.Func == "net.(*Dialer).DialContext" }) {
		t.Error("no frame of net.(*Dialer).DialContext")
	}
}

func TestUnwindStripped(t *testing.T) { testFixture(t, "stripped") }

func TestUnwindPIE(t *testing.T) { testFixture(t, "pie") }

func testFixture(t *testing.T, mode string) {
	exe := buildFixture(t, mode)
	tab := checkVictim(t, exe, nil, "", filepath.Join("testdata", "fixture", "main.go"), []want{
		{"main.inner", "inner", false},
		{"main.inlined", "inlined", true},
		{"main.outer", "outer", false},
		{"main.reader", "reader", false},
		{"main.start.gowrap1", "go", false},
	}, "main.reader", false)
	if tab.Module != "example.com/fixture" || tab.MainPackage != "example.com/fixture" {
		t.Errorf("module %q, main package %q; want example.com/fixture", tab.Module, tab.MainPackage)
	}
	if tab.PIE != (mode == "pie") {
		t.Errorf("PIE = %v", tab.PIE)
	}
}

// checkVictim runs a victim, unwinds its blocked thread and checks the
// frames of the main module (names, lines from the markers of src, in
// order), the entry, Where, and that every frame is verified.
func checkVictim(t *testing.T, exe string, args []string, env, src string, wants []want, entry string, isTest bool) *Table {
	t.Helper()
	tab, _ := checkStack(t, exe, startVictim(t, exe, args, env), src, wants, entry, isTest)
	return tab
}

// checkStack is checkVictim for a victim started.
func checkStack(t *testing.T, exe string, v victim, src string, wants []want, entry string, isTest bool) (*Table, *Stack) {
	t.Helper()
	tab, err := Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	lines := markers(t, src)
	s, err := tab.UnwindThread(v.pid, v.tid)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range s.Frames {
		t.Logf("%#x %s %s:%d inlined=%v", f.PC, f.Func, f.File, f.Line, f.Inlined)
	}
	if !s.Complete || s.Stop != "" {
		t.Fatalf("incomplete stack: %s", s.Stop)
	}
	if f := s.Frames[0].Func; !strings.HasPrefix(f, "internal/runtime/syscall") && !strings.HasPrefix(f, "syscall.") {
		t.Errorf("innermost frame %s, want the syscall stub", f)
	}
	var got []Frame
	for _, f := range s.Frames {
		if tab.isUser(FuncPackage(f.Func), f.File) {
			got = append(got, f)
		}
	}
	if len(got) != len(wants) {
		t.Fatalf("%d frames in the module, want %d", len(got), len(wants))
	}
	for i, w := range wants {
		g := got[i]
		if ShortName(g.Func) != w.fn || g.Line != lines[w.marker] || g.Inlined != w.inlined || filepath.Base(g.File) != filepath.Base(src) {
			t.Errorf("frame %d: %s %s:%d inlined=%v; want %s %s:%d inlined=%v",
				i, ShortName(g.Func), filepath.Base(g.File), g.Line, g.Inlined, w.fn, filepath.Base(src), lines[w.marker], w.inlined)
		}
	}
	checkVerified(t, tab, v.pid, s)
	w, ok := tab.Where(s)
	if !ok {
		t.Fatal("no frame in the module")
	}
	wantWhere := filepath.Base(src) + ":" + strconv.Itoa(lines[wants[0].marker]) + " (" + wants[0].fn + ")"
	if w.String() != wantWhere || w.Entry != entry || w.EntryIsTest != isTest {
		t.Errorf("where %q, entry %q (test %v); want %q, entry %q (test %v)", w, w.Entry, w.EntryIsTest, wantWhere, entry, isTest)
	}
	if want := strings.TrimPrefix(filepath.ToSlash(src), "testdata/fixture/"); w.RelFile != "callstack/"+want && w.RelFile != want {
		t.Errorf("RelFile %q", w.RelFile)
	}
	return tab, s
}

// checkVerified checks each physical frame again, independently of
// the unwinder: its pc is in its function, and every return address
// follows a call instruction.
func checkVerified(t *testing.T, tab *Table, pid int, s *Stack) {
	t.Helper()
	bias, err := tab.Bias(pid)
	if err != nil {
		t.Fatal(err)
	}
	if tab.PIE == (bias == 0) {
		t.Errorf("PIE %v, bias %#x", tab.PIE, bias)
	}
	for i, f := range s.Frames {
		if i > 0 && f.PC == s.Frames[i-1].PC {
			continue // an inlined call's function
		}
		if f.PC <= f.Entry {
			t.Errorf("frame %d: pc %#x not after the entry %#x of %s", i, f.PC, f.Entry, f.Func)
		}
		if i == 0 {
			continue
		}
		if err := tab.verifyReturn(f.PC - bias); err != nil {
			t.Errorf("frame %d (%s): %v", i, f.Func, err)
		}
		if !afterCallAMD64(tab.code(f.PC-bias, 8)) && tab.Arch == AMD64 {
			t.Errorf("frame %d (%s): not after a call", i, f.Func)
		}
	}
}

// TestUnwindStops checks that the walk ends, saying why, at a return
// address it cannot verify, and completes at runtime.goexit.
func TestUnwindStops(t *testing.T) {
	tab := selfTable(t)
	f, ok := tab.pcln.find(funcPC(sortAndRead))
	if !ok {
		t.Fatal("sortAndRead not found")
	}
	// A pc of sortAndRead where it has its frame.
	pc, size := f.entry, int64(0)
	for ; pc < f.end; pc++ {
		if d, ok := tab.pcln.spdelta(f, pc); ok && d > 0 {
			size = d
			break
		}
	}
	if size == 0 {
		t.Fatal("sortAndRead has no frame")
	}
	const sp = 0x7000_0000
	slot := uint64(sp)
	if tab.Arch == AMD64 {
		slot += uint64(size)
	}
	for _, c := range []struct {
		name     string
		ret      uint64
		complete bool
		stop     string
	}{
		{"goexit", tab.goexit.entry + tab.pcln.quantum, true, ""},
		{"a function's entry", f.entry, false, "not after a call instruction"},
		{"outside the text", 0x10, false, "not in a Go function"},
		{"nothing", 0, false, "reading the stack"},
	} {
		mem := fakeMemory{}
		if c.ret != 0 {
			mem[slot] = c.ret
		}
		s := tab.Unwind(mem, 0, Regs{PC: pc, SP: sp})
		if s.Complete != c.complete || !strings.Contains(s.Stop, c.stop) || len(s.Frames) != 1 || !strings.HasSuffix(s.Frames[0].Func, ".sortAndRead") {
			t.Errorf("%s: complete %v, stop %q, %d frames", c.name, s.Complete, s.Stop, len(s.Frames))
		}
	}
	if s := tab.Unwind(fakeMemory{}, 0, Regs{PC: 0x10, SP: sp}); len(s.Frames) != 0 || !strings.Contains(s.Stop, "not in a Go function") {
		t.Errorf("a pc outside Go code: %d frames, %q", len(s.Frames), s.Stop)
	}
	if tab.Arch != AMD64 {
		return
	}
	// A stack of sortAndRead calling itself forever ends at MaxFrames.
	var ret uint64
	for a := f.entry; a+5 <= f.end && ret == 0; a++ {
		if b := tab.code(a+5, 5); b[0] == 0xe8 && tab.verifyReturn(a+5) == nil {
			ret = a + 5
		}
	}
	d, ok := tab.pcln.spdelta(f, ret)
	if ret == 0 || !ok || d <= 0 {
		t.Fatalf("no call in sortAndRead (%#x, %d)", ret, d)
	}
	mem := fakeMemory{}
	for i, at := 0, uint64(sp); i <= MaxFrames; i, at = i+1, at+uint64(d)+8 {
		mem[at+uint64(d)] = ret
	}
	s := tab.Unwind(mem, 0, Regs{PC: ret, SP: sp})
	if s.Complete || s.Stop != fmt.Sprintf("more than %d frames", MaxFrames) || len(s.Frames) < MaxFrames {
		t.Errorf("an endless stack: complete %v, stop %q, %d frames", s.Complete, s.Stop, len(s.Frames))
	}
}

// TestConcurrentUnwinds unwinds a victim from several goroutines
// sharing one Table (run with -race), opened through /proc/PID/exe.
func TestConcurrentUnwinds(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	v := startVictim(t, exe, nil, victimEnv+"=deep")
	procExe := "/proc/" + strconv.Itoa(v.pid) + "/exe"
	tab, err := Open(procExe)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(exe)
	if err != nil {
		t.Fatal(err)
	}
	other, err := os.Stat("/proc/self/cwd")
	if err != nil {
		t.Fatal(err)
	}
	if !tab.SameFile(fi) || tab.SameFile(other) {
		t.Errorf("SameFile: %v for the executable, %v for a directory", tab.SameFile(fi), tab.SameFile(other))
	}
	want, err := tab.UnwindThread(v.pid, v.tid)
	if err != nil || !want.Complete {
		t.Fatalf("%v %+v", err, want)
	}
	lines := markers(t, "victim_test.go")
	deep := 0
	for _, f := range want.Frames {
		if strings.HasSuffix(f.Func, ".victimDeep") {
			deep++
			if f.Line != lines["deep"] && f.Line != lines["deepest"] {
				t.Errorf("victimDeep at line %d", f.Line)
			}
		}
	}
	if deep != 6 {
		t.Errorf("%d frames of victimDeep, want 6", deep)
	}
	errs := make(chan string, 4)
	for range 4 {
		go func() {
			for range 50 {
				s, err := tab.UnwindThread(v.pid, v.tid)
				if err != nil {
					errs <- err.Error()
					return
				}
				if !slices.Equal(s.Frames, want.Frames) {
					errs <- fmt.Sprintf("%d frames, want %d", len(s.Frames), len(want.Frames))
					return
				}
			}
			errs <- ""
		}()
	}
	for range 4 {
		if e := <-errs; e != "" {
			t.Error(e)
		}
	}
}
