package testexec

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/bpf"
	"github.com/nettrap/nettrap/decision"
)

// execCall is an execve of path by this process, as the supervisor would
// hand it over: path is read from this process's memory.
func execCall(path string) (*decision.Call, []byte) {
	buf := append([]byte(path), 0)
	c := &decision.Call{TID: unix.Gettid(), Syscall: bpf.Call{Kind: bpf.Execve, Name: "execve"},
		Task: decision.FixedTask{}}
	c.Args[0] = uint64(uintptr(unsafe.Pointer(&buf[0])))
	return c, buf
}

type recorder struct{ calls int }

func (r *recorder) Decide(*decision.Call) decision.Answer {
	r.calls++
	return decision.Deny(unix.EPERM)
}

func TestDecide(t *testing.T) {
	self := filepath.Join(t.TempDir(), "nettrap")
	next := &recorder{}
	d := &Decider{Next: next, Self: self}

	// A network call goes to Next.
	if a := d.Decide(&decision.Call{Syscall: bpf.Call{Kind: bpf.Connect}}); a.Allowed() || next.calls != 1 {
		t.Errorf("connect: %+v, Next called %d times; want Next's denial", a, next.calls)
	}
	work := workBinary(t)
	outside := filepath.Join(t.TempDir(), "x.test")
	if err := os.Link(work, outside); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(filepath.Dir(work), "script.test")
	os.WriteFile(script, []byte("#!/bin/sh\n"), 0o755)
	for _, c := range []struct {
		name      string
		path      string
		isGo      bool
		toolchain bool // the caller's calls would be the go command's own
		allow     bool
		swap      bool
	}{
		{"not the go command's child", work, false, false, true, false},
		{"a go command that is not nettrap's child", work, false, true, false, false},
		{"a tool", "/usr/local/go/pkg/tool/linux_amd64/vet", true, false, true, false},
		{"a test binary outside the work dir", outside, true, false, false, false},
		{"not a test binary", script, true, false, false, false},
		{"a test binary", work, true, false, true, true},
		{"a wrapped test binary", work, true, false, true, true},
	} {
		d.IsGo = func(pid int) bool { return c.isGo && pid == os.Getppid() }
		d.Toolchain = func(int) bool { return c.toolchain }
		call, buf := execCall(c.path)
		a := d.Decide(call)
		runtime.KeepAlive(buf)
		if a.Allowed() != c.allow || (!a.Allowed() && a.Errno() != unix.EACCES) {
			t.Errorf("%s: %+v, want allow %v (else EACCES)", c.name, a, c.allow)
		}
		target, _ := os.Readlink(c.path)
		if swapped := target == self; swapped != c.swap {
			t.Errorf("%s: swapped %v, want %v", c.name, swapped, c.swap)
		}
	}
	if next.calls != 1 {
		t.Errorf("exec calls reached Next (%d calls)", next.calls)
	}
}

// execCallWith is an execve of path with argv and envp, all read from
// this process's memory; keep is to keep alive until the call is decided.
func execCallWith(path string, argv, envp []string) (c *decision.Call, keep []any) {
	c, buf := execCall(path)
	keep = append(keep, buf)
	for i, list := range [][]string{argv, envp} {
		ptrs := make([]uint64, len(list)+1)
		for j, s := range list {
			b := append([]byte(s), 0)
			keep = append(keep, b)
			ptrs[j] = uint64(uintptr(unsafe.Pointer(&b[0])))
		}
		keep = append(keep, ptrs)
		c.Args[i+1] = uint64(uintptr(unsafe.Pointer(&ptrs[0])))
	}
	return c, keep
}

// TestDecideCommandRun: under a command run, a go test whose GODEBUG
// lacks nettrap's setting is refused, and so is a test binary whose
// result may be cached when no go command nettrap knows starts it.
func TestDecideCommandRun(t *testing.T) {
	goExe, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command in PATH")
	}
	self := filepath.Join(t.TempDir(), "nettrap")
	work := workBinary(t)
	const setting = "nettrapcfg=abc"
	testlog := "-test.testlogfile=" + filepath.Join(filepath.Dir(work), "testlog.txt")
	for _, c := range []struct {
		name          string
		path          string
		argv, envp    []string
		isGo, outside bool
		allow, swap   bool
	}{
		{"go test, GODEBUG replaced", goExe, []string{"go", "test", "./..."}, []string{"GODEBUG=x=1"}, false, true, false, false},
		{"go test, no GODEBUG", goExe, []string{"go", "test"}, []string{"HOME=/"}, false, true, false, false},
		{"go test, GODEBUG added to", goExe, []string{"go", "test"}, []string{"GODEBUG=x=1," + setting}, false, true, true, false},
		{"go vet, GODEBUG replaced", goExe, []string{"go", "vet"}, []string{"GODEBUG=x=1"}, false, true, true, false},
		{"go test under an inner", goExe, []string{"go", "test"}, []string{"GODEBUG=x=1"}, false, false, true, false},
		{"not a go command", "/bin/sh", []string{"sh", "-c", "go test"}, []string{"GODEBUG=x=1"}, false, true, true, false},
		{"cacheable, unknown starter", work, []string{work, testlog}, []string{"GODEBUG=" + setting}, false, true, false, false},
		{"uncacheable, unknown starter", work, []string{work, "-test.v=true"}, []string{"GODEBUG=" + setting}, false, true, true, false},
		{"cacheable, under an inner", work, []string{work, testlog}, []string{"GODEBUG=x=1"}, false, false, true, false},
		{"cacheable, a go command's child", work, []string{work, testlog}, []string{"GODEBUG=" + setting}, true, true, true, true},
	} {
		d := &Decider{Next: &recorder{}, Self: self, Godebug: setting,
			IsGo:    func(pid int) bool { return c.isGo && pid == os.Getppid() },
			Outside: func(int) bool { return c.outside }}
		call, keep := execCallWith(c.path, c.argv, c.envp)
		a := d.Decide(call)
		runtime.KeepAlive(keep)
		if a.Allowed() != c.allow || (!a.Allowed() && a.Errno() != unix.EACCES) {
			t.Errorf("%s: %+v, want allow %v (else EACCES)", c.name, a, c.allow)
		}
		target, _ := os.Readlink(c.path)
		if swapped := target == self; swapped != c.swap {
			t.Errorf("%s: swapped %v, want %v", c.name, swapped, c.swap)
		}
		if c.swap {
			if err := Restore(c.path, self); err != nil {
				t.Fatal(err)
			}
		}
	}
}
