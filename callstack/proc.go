package callstack

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// A Syscall is what /proc/TID/syscall says of a thread blocked in the
// kernel: the system call and its arguments, and the registers to
// unwind its stack from (PC and SP; no LR or FP).
type Syscall struct {
	// Nr is the system call's number; -1: the thread is blocked, but
	// not in a system call (Args are then zero).
	Nr   int
	Args [6]uint64
	Regs Regs
}

// ErrRunning is returned for a thread that is not blocked: its
// registers change while they are read.
var ErrRunning = errors.New("the thread is running")

// ReadSyscall reads /proc/TID/syscall (reading another process's needs
// ptrace access to it: its parent has it).
func ReadSyscall(tid int) (Syscall, error) {
	b, err := readSmall("/proc/" + strconv.Itoa(tid) + "/syscall")
	if err != nil {
		return Syscall{}, fmt.Errorf("callstack: %w", err)
	}
	s, err := ParseSyscall(b)
	if err != nil {
		return Syscall{}, fmt.Errorf("callstack: /proc/%d/syscall: %w", tid, err)
	}
	return s, nil
}

// ReadSyscallBlocked is ReadSyscall for a thread that is going to block:
// while /proc/TID/syscall says the thread is running, it reads again,
// for up to wait in all, as long as still() says the thread is held
// (a caller in a seccomp notification: once it left the call, what would
// be read is another call's). Why: the kernel queues a notification and wakes the
// supervisor before the caller sets its own state to sleep, and a
// supervisor on another CPU can read first; the kernel reads a thread's
// registers only once it is off its CPU (task_current_syscall), and
// "running" until then. Seen under QEMU's TCG, where a vCPU can be
// descheduled inside that window.
func ReadSyscallBlocked(tid int, wait time.Duration, still func() bool) (Syscall, error) {
	deadline := time.Now().Add(wait)
	pause := 20 * time.Microsecond
	for {
		s, err := ReadSyscall(tid)
		if !errors.Is(err, ErrRunning) || !still() || time.Now().After(deadline) {
			return s, err
		}
		time.Sleep(pause)
		pause = min(2*pause, time.Millisecond)
	}
}

// ParseSyscall parses the text of /proc/TID/syscall: "NR ARG0 .. ARG5
// SP PC" (the number in decimal, the rest in hex), "-1 SP PC" for a
// thread blocked outside a system call, or "running".
func ParseSyscall(b []byte) (Syscall, error) {
	f := strings.Fields(string(b))
	if len(f) == 1 && f[0] == "running" {
		return Syscall{}, ErrRunning
	}
	if len(f) != 9 && len(f) != 3 {
		return Syscall{}, fmt.Errorf("unexpected format %q", b)
	}
	var s Syscall
	nr, err := strconv.Atoi(f[0])
	if err != nil || nr < -1 || (nr == -1) != (len(f) == 3) {
		return Syscall{}, fmt.Errorf("unexpected system call number %q", f[0])
	}
	s.Nr = nr
	var v [8]uint64
	for i, x := range f[1:] {
		h, ok := strings.CutPrefix(x, "0x")
		if !ok {
			return Syscall{}, fmt.Errorf("unexpected value %q", x)
		}
		if v[i], err = strconv.ParseUint(h, 16, 64); err != nil {
			return Syscall{}, fmt.Errorf("unexpected value %q", x)
		}
	}
	if len(f) == 3 {
		s.Regs = Regs{SP: v[0], PC: v[1]}
		return s, nil
	}
	copy(s.Args[:], v[:6])
	s.Regs = Regs{SP: v[6], PC: v[7]}
	return s, nil
}

// Bias returns the load bias of the table's executable in process pid:
// what to add to a link-time address. 0 for a non-PIE executable; for a
// PIE one, from the mapping of the executable in /proc/PID/maps (the
// same file: device and inode, or else path).
func (t *Table) Bias(pid int) (uint64, error) {
	if !t.PIE {
		return 0, nil
	}
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/maps")
	if err != nil {
		return 0, fmt.Errorf("callstack: %w", err)
	}
	defer f.Close()
	b, err := t.bias(f)
	if err != nil {
		return 0, fmt.Errorf("callstack: load bias of %s in %d: %w", t.Path, pid, err)
	}
	return b, nil
}

func (t *Table) bias(maps io.Reader) (uint64, error) {
	path := t.Path
	if p, err := filepath.EvalSymlinks(path); err == nil {
		path = p
	}
	if p, err := filepath.Abs(path); err == nil {
		path = p
	}
	page := uint64(os.Getpagesize())
	sc := bufio.NewScanner(maps)
	for sc.Scan() {
		// start-end perms offset major:minor inode path
		f := strings.Fields(sc.Text())
		if len(f) < 6 {
			continue
		}
		same := false
		if dev, ino, ok := parseDevIno(f[3], f[4]); ok && t.ino != 0 && dev == t.dev && ino == t.ino {
			same = true
		} else if strings.Join(f[5:], " ") == path {
			same = true
		}
		if !same {
			continue
		}
		start, err1 := strconv.ParseUint(f[0][:max(0, strings.IndexByte(f[0], '-'))], 16, 64)
		off, err2 := strconv.ParseUint(f[2], 16, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		for _, p := range t.loads {
			if p.Off&^(page-1) == off && p.Filesz > 0 {
				return start - p.Vaddr&^(page-1), nil
			}
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, errors.New("the executable is not mapped")
}

func parseDevIno(dev, ino string) (uint64, uint64, bool) {
	maj, min, ok := strings.Cut(dev, ":")
	if !ok {
		return 0, 0, false
	}
	a, err1 := strconv.ParseUint(maj, 16, 32)
	b, err2 := strconv.ParseUint(min, 16, 32)
	i, err3 := strconv.ParseUint(ino, 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return 0, 0, false
	}
	return unix.Mkdev(uint32(a), uint32(b)), i, true
}

// ProcessMemory reads the memory of process pid with process_vm_readv
// (the permission is ptrace's: the tracer or the parent has it). It
// keeps what it read, a page at a time: use one per stop of the thread.
// It implements io.ReaderAt at process addresses.
func ProcessMemory(pid int) io.ReaderAt {
	return &procMem{pid: pid, pages: map[uint64][]byte{}}
}

const memPage = 4096

type procMem struct {
	pid   int
	pages map[uint64][]byte
}

func (m *procMem) ReadAt(p []byte, off int64) (int, error) {
	n := 0
	for n < len(p) {
		addr := uint64(off) + uint64(n)
		base := addr &^ (memPage - 1)
		pg, ok := m.pages[base]
		if !ok {
			pg = make([]byte, memPage)
			got, err := unix.ProcessVMReadv(m.pid,
				[]unix.Iovec{{Base: &pg[0], Len: memPage}},
				[]unix.RemoteIovec{{Base: uintptr(base), Len: memPage}}, 0)
			if err != nil {
				return n, os.NewSyscallError("process_vm_readv", err)
			}
			pg = pg[:got]
			m.pages[base] = pg
		}
		o := addr - base
		if o >= uint64(len(pg)) {
			return n, io.ErrUnexpectedEOF
		}
		n += copy(p[n:], pg[o:])
	}
	return n, nil
}

// maxIov is how many pages one process_vm_readv reads (IOV_MAX).
const maxIov = 1024

// Prefetch reads the pages that hold n bytes at each of addrs not read
// yet, with one process_vm_readv per maxIov pages: for a reader about
// to read many small pieces (package ancestry reads every goroutine).
// A page that cannot be read is left out: ReadAt then reads it alone,
// and fails.
func (m *procMem) Prefetch(addrs []uint64, n int) {
	var want []uint64
	seen := map[uint64]bool{}
	for _, a := range addrs {
		for base := a &^ (memPage - 1); base < a+uint64(n); base += memPage {
			if _, ok := m.pages[base]; !ok && !seen[base] {
				seen[base] = true
				want = append(want, base)
			}
		}
	}
	for len(want) > 0 {
		batch := want[:min(len(want), maxIov)]
		buf := make([]byte, len(batch)*memPage)
		local := make([]unix.Iovec, len(batch))
		remote := make([]unix.RemoteIovec, len(batch))
		for i, base := range batch {
			local[i] = unix.Iovec{Base: &buf[i*memPage], Len: memPage}
			remote[i] = unix.RemoteIovec{Base: uintptr(base), Len: memPage}
		}
		got, err := unix.ProcessVMReadv(m.pid, local, remote, 0)
		if err != nil {
			got = 0
		}
		full := got / memPage
		for i := 0; i < full; i++ {
			m.pages[batch[i]] = buf[i*memPage : (i+1)*memPage : (i+1)*memPage]
		}
		// The kernel stops at the first page it cannot read: skip it.
		want = want[min(len(batch), full+1):]
	}
}

// UnwindThread unwinds the stack of thread tid of process pid, blocked
// in a system call: registers from /proc/TID/syscall, memory with
// process_vm_readv.
func (t *Table) UnwindThread(pid, tid int) (*Stack, error) {
	sc, err := ReadSyscall(tid)
	if err != nil {
		return nil, err
	}
	bias, err := t.Bias(pid)
	if err != nil {
		return nil, err
	}
	return t.Unwind(ProcessMemory(tid), bias, sc.Regs), nil
}

// readSmall reads a small /proc file with three raw calls (open, read,
// close): os.ReadFile's os.File adds an fstat, four fcntls and an
// epoll_ctl that fails on a regular file, on every denial. The file
// fits one read (/proc/TID/syscall is under 200 bytes).
func readSmall(path string) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	var buf [512]byte
	for {
		n, err := unix.Read(fd, buf[:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "read", Path: path, Err: err}
		}
		return append([]byte(nil), buf[:n]...), nil
	}
}
