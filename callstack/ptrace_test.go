package callstack

import (
	"os"
	"runtime"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// TestUnwindPtrace stops a victim's blocked thread with ptrace (seize,
// interrupt) and unwinds it from its full registers: the same frames as
// from /proc/TID/syscall.
func TestUnwindPtrace(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tab, err := Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	v := startVictim(t, exe, nil, victimEnv+"=goroutine")
	before, err := tab.UnwindThread(v.pid, v.tid)
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
	if r.FP == 0 || r.SP == 0 {
		t.Errorf("registers %+v", r)
	}
	s := tab.Unwind(ProcessMemory(v.tid), 0, r)
	if !s.Complete || !slices.Equal(s.Frames, before.Frames) {
		t.Errorf("from ptrace: complete %v (%s), %d frames; from /proc: %d frames", s.Complete, s.Stop, len(s.Frames), len(before.Frames))
	}
}
