package testexec

import (
	"debug/buildinfo"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/bpf"
	"github.com/nettrap/nettrap/decision"
	"github.com/nettrap/nettrap/procfs"
)

// Under a command run (`nettrap -- make test`) a go command may be
// anywhere in the tree, and the command may change its environment. Two
// rules keep the test cache sound there (Decider.Outside, Decider.Godebug):
//
//   - The cache key: a go command started for `go test` with a GODEBUG
//     that lacks nettrap's setting would take results cached outside
//     nettrap, and print them as "(cached)" without starting any test
//     binary. So its exec is refused.
//   - A test binary that the go command may cache (it was given
//     -test.testlogfile, which the go command passes only when it can
//     cache the result) is wrapped when its starter is a go command
//     IsGoCommand knows; started by anything else it is refused, never
//     run unwrapped, where a pass that swallowed a denial would be
//     cached.

// IsGoCommand tells whether exe, a program's path, is a go command: its
// base name is go (an installed toolchain, one GOTOOLCHAIN switched to
// in the module cache), or it names itself cmd/go in its build
// information (a renamed copy). A false positive only adds supervision
// or refuses a GODEBUG; a go command it misses has its cacheable test
// binaries refused.
func IsGoCommand(exe string) bool {
	if filepath.Base(exe) == "go" {
		return true
	}
	if real, err := filepath.EvalSymlinks(exe); err == nil && filepath.Base(real) == "go" {
		return true
	}
	bi, err := buildinfo.ReadFile(exe)
	return err == nil && bi.Path == "cmd/go"
}

// IsGoProcess tells whether process pid runs a go command.
func IsGoProcess(pid int) bool {
	exe, err := procfs.Exe(pid)
	if err != nil {
		return false
	}
	if filepath.Base(exe) == "go" {
		return true
	}
	// The program the process runs, even if its path was replaced.
	return IsGoCommand(procfs.TaskPath(pid, "exe"))
}

// HasSetting tells whether the GODEBUG value v holds setting (k=v).
func HasSetting(v, setting string) bool {
	for _, kv := range strings.Split(v, ",") {
		if strings.TrimSpace(kv) == setting {
			return true
		}
	}
	return false
}

// Godebug is the GODEBUG value of environment env as a Go program reads
// it (the first one), and whether there is one.
func Godebug(env []string) (string, bool) {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GODEBUG="); ok {
			return v, true
		}
	}
	return "", false
}

// GoSubcommand is the go command's subcommand in argv (go [-C dir] CMD).
func GoSubcommand(argv []string) string {
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		if !strings.HasPrefix(a, "-") {
			return a
		}
		if a == "-C" || a == "--C" {
			i++ // its value
		}
	}
	return ""
}

// HasTestlog tells whether a test binary's argv names a test log: the go
// command passes one only to a run whose result it may cache.
func HasTestlog(argv []string) bool {
	_, ok := testlog(argv)
	return ok
}

// checkGodebug refuses the exec of a go command for `go test` under no
// inner whose environment lacks d.Godebug in its GODEBUG; ok: the exec
// goes on to the other checks.
func (d *Decider) checkGodebug(c *decision.Call) (a decision.Answer, ok bool) {
	if d.Godebug == "" || d.Outside == nil || !d.Outside(c.TID) {
		return a, true
	}
	env, envErr := execStrings(c, 2)
	v, set := Godebug(env)
	if envErr == nil && HasSetting(v, d.Godebug) {
		return a, true
	}
	path, err := execPath(c)
	if err != nil || !isFile(path) || !IsGoCommand(path) {
		// A shell tries every directory of PATH: the exec of a file
		// that is not there fails by itself.
		return a, true
	}
	argv, argErr := execStrings(c, 1)
	if !c.Task.Pending() {
		return decision.Deny(unix.ESRCH), false
	}
	if argErr == nil && GoSubcommand(argv) != "test" {
		return a, true
	}
	switch {
	case envErr != nil || argErr != nil:
		d.notef("cannot read how %s is started (%v); not starting it: its test cache must not take results of runs outside nettrap", path, firstErr(envErr, argErr))
	case !set:
		d.notef("%s test is started without GODEBUG (nettrap set it to %s): its test cache would take the results of runs outside nettrap; not starting it: add to GODEBUG rather than drop it, or use --cache=off", path, d.Godebug)
	default:
		d.notef("%s test is started with GODEBUG=%s, which replaces nettrap's %s: its test cache would take the results of runs outside nettrap; not starting it: add to GODEBUG rather than replace it (GODEBUG=$$GODEBUG,x=1 in a Makefile), or use --cache=off", path, v, d.Godebug)
	}
	return decision.Deny(unix.EACCES), false
}

func isFile(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

func firstErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// refuseUnwrapped refuses the exec of a test binary at path (in a
// go-build work directory) by a process under no inner that is no go
// command IsGo knows, when the go command may cache its result.
func (d *Decider) refuseUnwrapped(c *decision.Call, path string) (decision.Answer, bool) {
	if d.Outside == nil || !d.Outside(c.TID) {
		return decision.Answer{}, false
	}
	argv, err := execStrings(c, 1)
	if !c.Task.Pending() {
		return decision.Deny(unix.ESRCH), true
	}
	if err == nil && !HasTestlog(argv) {
		// No test log, no cached result (-exec, -count=1): it runs
		// confined, named by process.
		return decision.Answer{}, false
	}
	d.notef("%s is started by %s, which nettrap does not know for a go command, where nettrap cannot wrap it and its result would be cached; not starting it: run the go command as an executable named go, or use --cache=off", path, starter(c.TID))
	return decision.Deny(unix.EACCES), true
}

// starter names the parent of tid, for messages.
func starter(tid int) string {
	p := procfs.ParentPID(tid)
	if exe, err := procfs.Exe(p); err == nil {
		return fmt.Sprintf("%s (pid %d)", exe, p)
	}
	return fmt.Sprintf("pid %d", p)
}

// execStrings is the argv (arg 1) or envp (arg 2) of an execve or
// execveat of c, read from the caller's memory (64-bit pointers: a
// foreign call never gets here).
func execStrings(c *decision.Call, arg int) ([]string, error) {
	addr := c.Args[arg]
	if c.Syscall.Kind == bpf.Execveat {
		addr = c.Args[arg+1]
	}
	start := addr
	f, err := os.Open(procfs.TaskPath(c.TID, "mem"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	buf := make([]byte, 8*64)
	for addr != 0 {
		n, err := f.ReadAt(buf, int64(addr))
		n -= n % 8
		if n == 0 {
			return nil, fmt.Errorf("read the strings at %#x: %w", addr, err)
		}
		for i := 0; i < n; i += 8 {
			p := binary.LittleEndian.Uint64(buf[i:])
			if p == 0 {
				return out, nil
			}
			if len(out) >= maxStrings {
				return nil, fmt.Errorf("more than %d strings at %#x", maxStrings, start)
			}
			s, err := readStringIn(f, p, maxArgLen)
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
		addr += uint64(n)
	}
	return out, nil
}

const (
	maxStrings = 1 << 16
	maxArgLen  = 32 * 4096 // MAX_ARG_STRLEN
)
