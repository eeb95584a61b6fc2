package callstack

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nettrap/nettrap/procfs"
	"golang.org/x/sys/unix"
)

// victim is a process whose thread blocks in read(2).
type victim struct {
	pid, tid int
	fd       int
}

// startVictim runs exe with args and env, waits for its "ready FD" line
// and for a thread of it blocked reading FD, and kills it at the end of
// the test.
func startVictim(tb testing.TB, exe string, args []string, env ...string) victim {
	return startVictimIn(tb, unix.SYS_READ, exe, args, env...)
}

// startVictimIn is startVictim for a thread blocked in system call nr
// on FD.
func startVictimIn(tb testing.TB, nr int, exe string, args []string, env ...string) victim {
	tb.Helper()
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		tb.Fatalf("victim %s: %v", exe, err)
	}
	var v victim
	if _, err := fmt.Sscanf(line, "ready %d\n", &v.fd); err != nil {
		tb.Fatalf("victim said %q: %v", line, err)
	}
	v.pid = cmd.Process.Pid
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if tid := blockedIn(v.pid, nr, v.fd); tid > 0 {
			v.tid = tid
			return v
		}
		time.Sleep(5 * time.Millisecond)
	}
	tb.Fatalf("no thread of victim %d blocked in system call %d on %d", v.pid, nr, v.fd)
	return v
}

// blockedReading returns the thread of pid blocked in read(fd), or 0.
func blockedReading(pid, fd int) int {
	return blockedIn(pid, unix.SYS_READ, fd)
}

// blockedIn returns the thread of pid blocked in system call nr with
// fd as its first argument (any when fd is -1), or 0.
func blockedIn(pid, nr, fd int) int {
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, e := range tasks {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		s, err := ReadSyscall(tid)
		if err == nil && s.Nr == nr && (fd == -1 || s.Args[0] == uint64(fd)) {
			return tid
		}
	}
	return 0
}

var markerRE = regexp.MustCompile(`// at:(\w+)`)

// markers returns the lines of the "// at:NAME" markers of a file.
func markers(tb testing.TB, file string) map[string]int {
	tb.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		tb.Fatal(err)
	}
	m := map[string]int{}
	for i, l := range strings.Split(string(b), "\n") {
		if s := markerRE.FindStringSubmatch(l); s != nil {
			m[s[1]] = i + 1
		}
	}
	return m
}

// buildFixture builds testdata/fixture into a temporary directory of
// the test: "stripped" with -ldflags='-s -w', "pie" also with
// -buildmode=pie -trimpath; "external" linked by the host linker (as
// cgo binaries are), with its symbol table, "external-stripped" also
// with -s -w.
func buildFixture(tb testing.TB, mode string) string {
	tb.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		skipUnlessCI(tb, "building the fixture needs the go command: %v", err)
	}
	exe := filepath.Join(tb.TempDir(), "fixture-"+mode)
	args := []string{"build", "-o", exe, "-ldflags=-s -w"}
	switch mode {
	case "pie":
		args = append(args, "-buildmode=pie", "-trimpath")
	case "external", "external-stripped":
		if _, err := exec.LookPath("gcc"); err != nil {
			skipUnlessCI(tb, "external linking needs gcc: %v", err)
		}
		args[3] = "-ldflags=-linkmode=external"
		if mode == "external-stripped" {
			args[3] = "-ldflags=-s -w -linkmode=external"
		}
	}
	cmd := exec.Command(goCmd, append(args, ".")...)
	cmd.Dir = filepath.Join("testdata", "fixture")
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return exe
}

// skipUnlessCI skips the test with its reason on a machine that cannot
// run it, and fails it under CI=true, where every test must run.
func skipUnlessCI(tb testing.TB, format string, args ...any) {
	tb.Helper()
	if os.Getenv("CI") == "true" {
		tb.Fatalf(format+" (CI=true: not skipped)", args...)
	}
	tb.Skipf(format, args...)
}

// skipUnderNettrap skips a test whose victim installs a seccomp listener
// when this test binary runs under nettrap (its own suite run under
// nettrap, docs/development.md): the filter chain's only listener is the
// enclosing nettrap's, and a second one gets EBUSY.
func skipUnderNettrap(t *testing.T) {
	t.Helper()
	if os.Getenv("NETTRAP_HUB") != "" && procfs.SeccompFiltered() {
		t.Skip("under nettrap: the victim's seccomp listener would be a second one on the chain (EBUSY)")
	}
}
