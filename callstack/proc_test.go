package callstack

import (
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
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
