package callstack

import (
	"bufio"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestParseSyscall(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Syscall
		err  string
	}{
		{"0 0x3 0xc000012345 0x1 0x0 0x0 0x0 0xc00004e6f8 0x40abce\n",
			Syscall{Nr: 0, Args: [6]uint64{3, 0xc000012345, 1}, Regs: Regs{SP: 0xc00004e6f8, PC: 0x40abce}}, ""},
		{"42 0x7 0x7ffd1000 0x10 0xffffffffffffffff 0x0 0x0 0x7ffd0ff0 0x55cf3cd8668e",
			Syscall{Nr: 42, Args: [6]uint64{7, 0x7ffd1000, 0x10, ^uint64(0)}, Regs: Regs{SP: 0x7ffd0ff0, PC: 0x55cf3cd8668e}}, ""},
		{"-1 0x7ffc00001000 0x401234\n", Syscall{Nr: -1, Regs: Regs{SP: 0x7ffc00001000, PC: 0x401234}}, ""},
		{"running\n", Syscall{}, "running"},
		{"", Syscall{}, "unexpected format"},
		{"0 0x3 0x4", Syscall{}, "unexpected system call number"},
		{"-1 0x1 0x2 0x3 0x4 0x5 0x6 0x7 0x8", Syscall{}, "unexpected system call number"},
		{"x 0x1 0x2 0x3 0x4 0x5 0x6 0x7 0x8", Syscall{}, "unexpected system call number"},
		{"0 0x1 0x2 0x3 0x4 0x5 0x6 0x7 8", Syscall{}, "unexpected value"},
		{"0 0x1 0x2 0x3 0x4 0x5 0x6 0x7 0xg", Syscall{}, "unexpected value"},
		{"0 0x1 0x2 0x3 0x4 0x5 0x6 0x7 0x10000000000000000", Syscall{}, "unexpected value"},
	} {
		got, err := ParseSyscall([]byte(c.in))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q: %+v %v, want %+v", c.in, got, err, c.want)
		}
	}
	if _, err := ParseSyscall([]byte("running")); !errors.Is(err, ErrRunning) {
		t.Errorf("running: %v", err)
	}
}

// TestReadSyscallSelf reads this thread's own file: it is running.
func TestReadSyscallSelf(t *testing.T) {
	_, err := ReadSyscall(os.Getpid())
	if err != nil && !errors.Is(err, ErrRunning) {
		t.Fatal(err)
	}
	if _, err := ReadSyscall(1 << 30); err == nil {
		t.Error("a thread that does not exist")
	}
}

func FuzzParseSyscall(f *testing.F) {
	f.Add("0 0x3 0xc000012345 0x1 0x0 0x0 0x0 0xc00004e6f8 0x40abce\n")
	f.Add("-1 0x7ffc00001000 0x401234\n")
	f.Add("running\n")
	f.Fuzz(func(t *testing.T, in string) {
		s, err := ParseSyscall([]byte(in))
		if err != nil {
			return
		}
		// What parses prints back the same.
		out := fmt.Sprintf("%d", s.Nr)
		if s.Nr >= 0 {
			for _, a := range s.Args {
				out += fmt.Sprintf(" %#x", a)
			}
		}
		out += fmt.Sprintf(" %#x %#x", s.Regs.SP, s.Regs.PC)
		again, err := ParseSyscall([]byte(out))
		if err != nil || again != s {
			t.Fatalf("%q → %+v → %q → %+v, %v", in, s, out, again, err)
		}
	})
}

func TestBias(t *testing.T) {
	tab := &Table{Path: "/x/app", PIE: true, dev: 0xfd01, ino: 1234}
	tab.loads = append(tab.loads, progHeader(0, 0, 0x1000), progHeader(0x1000, 0x1000, 0x2000), progHeader(0x3000, 0x4000, 0x100))
	maps := "55d0e0000000-55d0e0001000 r--p 00000000 fd:01 1234 /x/app (deleted)\n"
	got, err := tab.bias(strings.NewReader(maps))
	if err != nil || got != 0x55d0e0000000 {
		t.Errorf("by inode: %#x %v", got, err)
	}
	maps = "7f0000000000-7f0000001000 r--p 00000000 00:1f 99 /lib/other.so\n" +
		"55d0e0001000-55d0e0003000 r-xp 00001000 00:2a 777 /x/app\n"
	got, err = tab.bias(strings.NewReader(maps))
	if err != nil || got != 0x55d0e0000000 {
		t.Errorf("by path, second segment: %#x %v", got, err)
	}
	if _, err := tab.bias(strings.NewReader("7f0000000000-7f0000001000 r--p 00000000 00:1f 99 /lib/other.so\n")); err == nil {
		t.Error("a bias without the executable")
	}
	tab.PIE = false
	if b, err := tab.Bias(1); b != 0 || err != nil {
		t.Errorf("not PIE: %#x %v", b, err)
	}
}

func progHeader(off, vaddr, size uint64) elf.ProgHeader {
	return elf.ProgHeader{Type: elf.PT_LOAD, Off: off, Vaddr: vaddr, Filesz: size, Memsz: size}
}

// TestReadSyscallBlockedWaits: a thread that runs reads as running
// (ReadSyscall, ErrRunning); ReadSyscallBlocked reads it again until it
// is off its CPU (here: stopped by SIGSTOP, not in a system call, "-1 SP
// PC"), gives up at its deadline, and at once when still() says no.
func TestReadSyscallBlockedWaits(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), victimEnv+"=spin", "GODEBUG=asyncpreemptoff=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if line, err := bufio.NewReader(out).ReadString('\n'); line != "ready\n" {
		t.Fatalf("victim: %q %v", line, err)
	}
	pid := cmd.Process.Pid
	if _, err := ReadSyscall(pid); !errors.Is(err, ErrRunning) {
		t.Fatalf("a spinning thread: %v, want %v", err, ErrRunning)
	}
	start := time.Now()
	if _, err := ReadSyscallBlocked(pid, 30*time.Millisecond, func() bool { return true }); !errors.Is(err, ErrRunning) {
		t.Errorf("past the deadline: %v, want %v", err, ErrRunning)
	}
	if d := time.Since(start); d < 30*time.Millisecond {
		t.Errorf("gave up after %v, want the 30ms given", d)
	}
	asked := 0
	still := func() bool { asked++; return asked < 3 }
	if _, err := ReadSyscallBlocked(pid, time.Hour, still); !errors.Is(err, ErrRunning) || asked != 3 {
		t.Errorf("once still() says no: %v after %d questions, want %v after 3", err, asked, ErrRunning)
	}
	stop := time.AfterFunc(50*time.Millisecond, func() { _ = cmd.Process.Signal(syscall.SIGSTOP) })
	defer stop.Stop()
	s, err := ReadSyscallBlocked(pid, time.Minute, func() bool { return true })
	if err != nil || s.Nr != -1 || s.Regs.SP == 0 || s.Regs.PC == 0 {
		t.Errorf("stopped while spinning: %+v %v, want nr -1 with its registers", s, err)
	}
}
