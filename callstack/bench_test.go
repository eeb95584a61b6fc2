package callstack

import (
	"os"
	"testing"
)

// BenchmarkUnwind measures one unwind and symbolization of a victim's
// thread blocked 15 frames deep, with a warm Table: reading its stack
// with process_vm_readv (a fresh ProcessMemory each time, as for each
// stop), the pcsp and inline tables, file and line of every frame.
func BenchmarkUnwind(b *testing.B) {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	tab, err := Open(exe)
	if err != nil {
		b.Fatal(err)
	}
	v := startVictim(b, exe, nil, victimEnv+"=deep")
	sc, err := ReadSyscall(v.tid)
	if err != nil {
		b.Fatal(err)
	}
	s := tab.Unwind(ProcessMemory(v.tid), 0, sc.Regs)
	if !s.Complete || len(s.Frames) < 15 {
		b.Fatalf("%d frames, complete %v: %s", len(s.Frames), s.Complete, s.Stop)
	}
	b.Run("unwind", func(b *testing.B) {
		for b.Loop() {
			tab.Unwind(ProcessMemory(v.tid), 0, sc.Regs)
		}
		b.ReportMetric(float64(len(s.Frames)), "frames")
	})
	b.Run("thread", func(b *testing.B) {
		// Also /proc/TID/syscall and the load bias.
		for b.Loop() {
			if _, err := tab.UnwindThread(v.pid, v.tid); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkOpen measures reading the tables of this test binary: what a
// cache of tables saves.
func BenchmarkOpen(b *testing.B) {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := Open(exe); err != nil {
			b.Fatal(err)
		}
	}
	if fi, err := os.Stat(exe); err == nil {
		b.ReportMetric(float64(fi.Size())/1e6, "MB-exe")
	}
}
