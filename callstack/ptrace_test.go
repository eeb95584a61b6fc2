package callstack

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestUnwindPtrace stops a victim's blocked thread with ptrace (seize,
// interrupt) and unwinds it from its full registers: the same frames as
// from /proc/TID/syscall.
func TestUnwindPtrace(t *testing.T) {
	exe, tab := selfExe(t)
	v := startVictim(t, exe, nil, victimEnv+"=goroutine")
	before, err := tab.UnwindThread(v.pid, v.tid)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := ReadSyscall(v.tid)
	if err != nil {
		t.Fatal(err)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := unix.PtraceSeize(v.tid); err != nil {
		skipUnlessCI(t, "ptrace: %v", os.NewSyscallError("ptrace", err))
	}
	defer unix.PtraceDetach(v.tid)
	if err := unix.PtraceInterrupt(v.tid); err != nil {
		t.Fatal(os.NewSyscallError("ptrace", err))
	}
	var ws unix.WaitStatus
	if _, err := unix.Wait4(v.tid, &ws, unix.WALL, nil); err != nil || !ws.Stopped() {
		t.Fatalf("wait: %v %v", err, ws)
	}
	var pr unix.PtraceRegs
	if err := unix.PtraceGetRegs(v.tid, &pr); err != nil {
		t.Fatal(os.NewSyscallError("ptrace", err))
	}
	r := RegsFromPtrace(&pr)
	// At this stop arm64 has already rewound the pc of the read, to
	// restart, onto its SVC: Unwind takes it as after it.
	atStop, _ := readSmall("/proc/" + strconv.Itoa(v.tid) + "/syscall")
	t.Logf("ptrace pc %#x; /proc/TID/syscall before the stop: pc %#x, at it: %q", r.PC, sc.Regs.PC, strings.TrimSpace(string(atStop)))
	if r.FP == 0 || r.SP == 0 {
		t.Errorf("registers %+v", r)
	}
	s := tab.Unwind(ProcessMemory(v.tid), 0, r)
	if !s.Complete || !slices.Equal(s.Frames, before.Frames) {
		t.Errorf("from ptrace (%+v): complete %v (%s), %d frames:\n%s\nfrom /proc (%+v): %d frames:\n%s",
			r, s.Complete, s.Stop, len(s.Frames), frameList(s.Frames), sc.Regs, len(before.Frames), frameList(before.Frames))
	}
}

// frameList prints frames one a line: pc, function, file:line, and
// whether the call was inlined.
func frameList(frames []Frame) string {
	var b strings.Builder
	for i, f := range frames {
		fmt.Fprintf(&b, "\t%2d %#x %s %s:%d", i, f.PC, f.Func, f.File, f.Line)
		if f.Inlined {
			b.WriteString(" (inlined)")
		}
		b.WriteByte('\n')
	}
	return b.String()
}
