package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nettrap/nettrap/integration/internal/harness"
	"github.com/nettrap/nettrap/integration/internal/lab"
	"github.com/nettrap/nettrap/integration/internal/procmem"
	"github.com/nettrap/nettrap/integration/internal/runmod"
	"github.com/nettrap/nettrap/landlock"
)

// Issue 35: a confined process writes code into a process with more
// network rights than its own through open("/proc/PID/mem", O_RDWR) and
// pwrite, which seccomp does not see, and that process connects out
// (package procmem: a hand-assembled payload at the victim's entry point,
// a jump to it at every blocked syscall's return address and at the Go
// runtime's signal handler, SIGURG). The victims: the go command under
// `nettrap -- go test` (its calls are the toolchain's), nettrap's reaper
// and the ptrace engine's waker (unconfined, started before the filter),
// and any unconfined process of the same user. Each case shows the attack
// delivering its marker to the outside unguarded, then under nettrap (as
// root and as nobody, default and --sealed, and as root --userns=off,
// where the tree keeps CAP_SYS_PTRACE), where the kernel refuses
// every ptrace-mode access from inside (nettrap's Landlock domain): the
// open (EACCES), process_vm_readv and process_vm_writev, pidfd_getfd and
// a signal (EPERM), and nothing arrives: a sentinel sent after the run,
// on a listener of the run's own, arrives alone.

// procmemMode is a mode of the guarded runs: nettrap's flags.
type procmemMode struct {
	name  string
	flags []string
}

// procmemModes are the modes of u's guarded runs: default and --sealed,
// and for root --userns=off, where the tree keeps CAP_SYS_PTRACE in the
// initial user namespace, which overrides the victims' non-dumpability
// and the user-namespace check: there the domain alone refuses it.
func procmemModes(u harness.User) []procmemMode {
	modes := []procmemMode{{"default", nil}, {"sealed", []string{"--sealed"}}}
	if u == harness.AsSelf && os.Geteuid() == 0 {
		modes = append(modes, procmemMode{"userns-off", []string{"--userns=off"}})
	}
	return modes
}

// needProcMem skips t where nettrap's answer to the attack cannot be
// there (a kernel whose Landlock does not scope signals: ABI < 6), which
// CI=true makes fatal. Off amd64 the attack runs up to its payload (x86-64
// code): every access that nettrap must refuse is tried (mustInject).
func needProcMem(t *testing.T) {
	t.Helper()
	// What nettrap itself will choose (package landlock), not a probe
	// of the test's own that could disagree with it.
	plan := landlock.Choose(false)
	if plan.Kind == landlock.Signals {
		return
	}
	why := fmt.Sprintf("%v: refusing ptrace access and signals across domains in both modes needs Landlock ABI 6 or later", plan)
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s (CI=true, so this is fatal)", why)
	}
	t.Skip(why)
}

// parseProcMem reads the Result escapee's procmem op printed.
func parseProcMem(t *testing.T, r labRun) procmem.Result {
	t.Helper()
	var res procmem.Result
	if err := json.Unmarshal([]byte(strings.TrimSpace(r.stdout)), &res); err != nil {
		t.Fatalf("escapee procmem printed %q (exit %d, stderr %q): %v", r.stdout, r.code, r.stderr, err)
	}
	return res
}

// mustInject: unguarded, every step worked, the payload went in and
// (unless exited is false: the caller checks the victim's status itself)
// the victim died of it; it says whether the payload ran. The payload is
// x86-64 code: elsewhere every step up to the payload's write must have
// worked (the accesses the guarded cases must be refused), and nothing
// was injected.
func mustInject(t *testing.T, res procmem.Result, exited bool) (payload bool) {
	t.Helper()
	if runtime.GOARCH != "amd64" {
		for _, s := range res.Steps {
			if s.Name == procmem.StepWrite {
				if s.OK || !strings.Contains(s.Err, "x86-64") {
					t.Errorf("the payload's write on %s: %+v, want it refused for the architecture", runtime.GOARCH, s)
				}
			} else if !s.OK {
				t.Errorf("unguarded %s failed (%s): %s", s.Name, s.Errno, s.Err)
			}
		}
		if res.Step(procmem.StepOpen).Name == "" || res.Injected {
			t.Fatalf("unguarded attack on pid %d on %s: want every access up to opening /proc/PID/mem, no payload: %+v", res.Pid, runtime.GOARCH, res.Steps)
		}
		t.Logf("the payload is x86-64 code: on %s the control stops at its write", runtime.GOARCH)
		return false
	}
	for _, s := range res.Steps {
		if !s.OK {
			t.Errorf("unguarded %s failed (%s): %s", s.Name, s.Errno, s.Err)
		}
	}
	if !res.Injected || (exited && !res.Exited) {
		t.Fatalf("unguarded attack on pid %d: injected=%v, victim exited=%v (jumps %d, sigtramp %v): %+v",
			res.Pid, res.Injected, res.Exited, res.Jumps, res.Sigtramp, res.Steps)
	}
	return true
}

// procmemRefusals are the errnos every step that the kernel checks as
// ptrace access (or, for kill, as a signal across Landlock domains)
// must get under nettrap.
var procmemRefusals = []struct{ step, errno string }{
	{procmem.StepKill, "EPERM"},
	{procmem.StepGetfd, "EPERM"},
	{procmem.StepVMRead, "EPERM"},
	{procmem.StepVMWrit, "EPERM"},
	{procmem.StepOpen, "EACCES"},
}

// mustRefuse: under nettrap the attack found its victim, and every
// access to it was refused; the payload never went in.
func mustRefuse(t *testing.T, res procmem.Result, r labRun) {
	t.Helper()
	if s := res.Step(procmem.StepFind); s.Name != "" {
		t.Fatalf("under nettrap the attack did not find its victim, so it proves nothing: %s\nstderr: %s", s.Err, r.stderr)
	}
	for _, want := range procmemRefusals {
		s := res.Step(want.step)
		if s.Name == "" || s.OK || s.Errno != want.errno {
			t.Errorf("under nettrap %s on pid %d: ok=%v errno=%q err=%q, want %s", want.step, res.Pid, s.OK, s.Errno, s.Err, want.errno)
		}
	}
	if s := res.Step(procmem.StepRegs); s.OK {
		t.Errorf("under nettrap /proc/%d/task/*/syscall could be read", res.Pid)
	}
	if res.Injected {
		t.Errorf("LEAK: under nettrap the payload was written into pid %d (victim exited: %v)", res.Pid, res.Exited)
	}
	if t.Failed() {
		t.Logf("steps: %+v\nstderr: %s", res.Steps, r.stderr)
	}
}

// payloadListener is a TCP listener of the run's own at the outside
// address, so that no other run's record can hide or invent a leak.
func payloadListener(t *testing.T, e labEnv) *lab.Listener {
	t.Helper()
	return e.ListenTCP(t, netip.AddrPortFrom(lab.Outside4, 0))
}

// noPayloadArrived: a sentinel sent now to ln is the first thing after
// mark (-1 for a fresh listener) that ln recorded.
func noPayloadArrived(t *testing.T, e labEnv, ln *lab.Listener, mark int, what string) {
	t.Helper()
	noRecordAfter(t, e, ln, "tcp", mark, what)
}

// procmemVictim is an unconfined process the test started in the lab,
// before and outside any nettrap.
type procmemVictim struct {
	pid   string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan struct{}
	code  int
}

// startVictim starts argv inside as u with files as fds 3, 4, …; with
// printsPid it reads the victim's pid from its first line of output.
func (e labEnv) startVictim(t *testing.T, u harness.User, printsPid bool, files []*os.File, argv ...string) *procmemVictim {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.ExtraFiles = files
	cmd.Stderr = os.Stderr
	if u == harness.AsNobody {
		lab.RequireRoot(t)
		lab.AsNobody(cmd)
	}
	v := &procmemVictim{cmd: cmd, done: make(chan struct{})}
	var err error
	if v.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(cmd); err != nil {
		t.Fatal(err)
	}
	v.pid = strconv.Itoa(cmd.Process.Pid)
	if printsPid {
		line, err := bufio.NewReader(stdout).ReadString('\n')
		if err != nil || strings.TrimSpace(line) != v.pid {
			cmd.Process.Kill()
			t.Fatalf("victim %v said %q (%v), want its pid %s", argv, line, err, v.pid)
		}
	}
	go func() {
		io.Copy(io.Discard, stdout)
		v.code = harness.ExitCode(cmd.Wait())
		close(v.done)
	}()
	t.Cleanup(func() {
		v.stdin.Close()
		cmd.Process.Kill()
		<-v.done
	})
	return v
}

// exited reports whether the victim has ended, and its status.
func (v *procmemVictim) exited() (bool, int) {
	select {
	case <-v.done:
		return true, v.code
	default:
		return false, 0
	}
}

// wait waits for the victim to end and returns its status.
func (v *procmemVictim) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-v.done:
		return v.code
	case <-time.After(waitTimeout):
		t.Fatalf("victim %s did not end", v.pid)
		return -1
	}
}

// mustDieOfPayload: the victim exited with the payload's status.
func (v *procmemVictim) mustDieOfPayload(t *testing.T) {
	t.Helper()
	if code := v.wait(t); code != procmem.PayloadExit {
		t.Errorf("victim %s exited %d, want the payload's %d", v.pid, code, procmem.PayloadExit)
	}
}

// mustLive: the victim is still there after a guarded run.
func (v *procmemVictim) mustLive(t *testing.T) {
	t.Helper()
	if done, code := v.exited(); done {
		t.Errorf("victim %s died under nettrap (status %d)", v.pid, code)
	}
}

// TestEscapeProcMemGoCommand: a test of a small module (testdata/procmem)
// walks up to the go command running it and attacks it. Bare `go test`
// dies of the payload (status 77) and the marker arrives. Under `nettrap
// -- go test` (the test binary in a Landlock domain nested below the go
// command's, whose calls are the toolchain's) and under `go test -exec
// nettrap` (the go command unconfined, the test binary in a domain of its
// own), default and sealed (and --userns=off as root), every access is
// refused and nothing arrives.
func TestEscapeProcMemGoCommand(t *testing.T) {
	needProcMem(t)
	e := newLabEnv(t)
	goTest := []string{"go", "test", "-count=1", "-v", "./..."}
	type goRun struct {
		name      string
		argv, env []string
	}
	goTestExec := slices.Concat(goTest[:2], []string{"-exec", e.bins.Nettrap}, goTest[2:])
	harness.ForUsers(t, []harness.User{harness.AsSelf, harness.AsNobody}, func(t *testing.T, u harness.User) {
		if u == harness.AsNobody {
			lab.RequireRoot(t)
		}
		m := procmemModule(t, u)
		var runs []goRun
		for _, mode := range procmemModes(u) {
			runs = append(runs, goRun{mode.name, slices.Concat([]string{e.bins.Nettrap}, mode.flags, []string{"--"}, goTest), nil})
		}
		runs = append(runs, goRun{"exec", goTestExec, nil}, goRun{"exec-sealed", goTestExec, []string{"NETTRAP_SEALED=1"}})
		attack := func(t *testing.T, name string, extraEnv, argv []string) (labRun, procmem.Result, *lab.Listener, string) {
			t.Helper()
			ln := payloadListener(t, e)
			marker := fmt.Sprintf("procmem go command %s %s;", u, name)
			result := filepath.Join(m.base, "result-"+name+".json")
			env := slices.Concat(m.env, extraEnv,
				[]string{"PROCMEM_DST=" + ln.Addr.String(), "PROCMEM_MARKER=" + marker, "PROCMEM_RESULT=" + result})
			r := e.runInDir(t, u, m.mod, env, argv...)
			b, err := os.ReadFile(result)
			if err != nil {
				t.Fatalf("the attacking test wrote no result (%v): exit %d\nstdout: %s\nstderr: %s", err, r.code, r.stdout, r.stderr)
			}
			var res procmem.Result
			if err := json.Unmarshal(b, &res); err != nil {
				t.Fatalf("result %q: %v", b, err)
			}
			return r, res, ln, marker
		}
		t.Run("unguarded", func(t *testing.T) {
			lab.OuterDenies(t, "pidfd_getfd and process_vm_writev on another process")
			r, res, ln, marker := attack(t, "unguarded", nil, goTest)
			if !mustInject(t, res, false) { // the go command's status says
				return
			}
			waitRecord(t, ln, "the payload's marker", containing(marker))
			if r.code != procmem.PayloadExit {
				t.Errorf("go test exited %d, want the payload's %d\nstdout: %s\nstderr: %s", r.code, procmem.PayloadExit, r.stdout, r.stderr)
			}
		})
		for _, g := range runs {
			t.Run(g.name, func(t *testing.T) {
				r, res, ln, _ := attack(t, g.name, g.env, g.argv)
				mustRefuse(t, res, r)
				if r.code == procmem.PayloadExit {
					t.Errorf("under nettrap go test exited %d, the payload's status\nstderr: %s", r.code, r.stderr)
				}
				noPayloadArrived(t, e, ln, -1, "the go command attacked under nettrap "+g.name)
			})
		}
	})
}

// TestEscapeProcMemReaper: a confined command attacks nettrap's reaper
// (the leader of its process group, unconfined). Unguarded the same
// attack on a process of the same kind (a Go process blocked reading a
// pipe, the reaper's signals ignored) delivers the marker.
func TestEscapeProcMemReaper(t *testing.T) {
	testProcMemHelper(t, "reaper", "read", nil)
}

// TestEscapeProcMemWaker: the same against the ptrace engine's waker (a
// child of the tracing nettrap that pauses), under --engine=ptrace.
func TestEscapeProcMemWaker(t *testing.T) {
	testProcMemHelper(t, "waker", "pause", []string{"--engine=ptrace"})
}

func testProcMemHelper(t *testing.T, target, kind string, flags []string) {
	needProcMem(t)
	e := newLabEnv(t)
	harness.ForUsers(t, []harness.User{harness.AsSelf, harness.AsNobody}, func(t *testing.T, u harness.User) {
		t.Run("unguarded", func(t *testing.T) {
			lab.OuterDenies(t, "pidfd_getfd and process_vm_writev on another process")
			ln := payloadListener(t, e)
			v := e.startVictim(t, u, true, nil, e.bins.Escapee, "idle", kind)
			marker := fmt.Sprintf("procmem %s-like %s;", target, u)
			res := parseProcMem(t, e.run(t, u, e.bins.Escapee, "procmem", v.pid, ln.Addr.String(), marker, "0"))
			if mustInject(t, res, true) {
				waitRecord(t, ln, "the payload's marker", containing(marker))
				v.mustDieOfPayload(t)
			}
		})
		for _, mode := range procmemModes(u) {
			t.Run(mode.name, func(t *testing.T) {
				ln := payloadListener(t, e)
				marker := fmt.Sprintf("procmem %s %s %s;", target, u, mode.name)
				r := e.guarded(t, u, slices.Concat(flags, mode.flags), e.bins.Escapee, "procmem", target, ln.Addr.String(), marker, "0")
				mustRefuse(t, parseProcMem(t, r), r)
				noPayloadArrived(t, e, ln, -1, "the "+target+" attacked under nettrap "+mode.name)
			})
		}
	})
}

// TestEscapeProcMemOutside: a confined command attacks an unconfined
// shell of the same user started before nettrap (`sh -c 'while :; do
// sleep 0.1; done'`, whose wait4 returns into the payload), which holds
// a connection to the outside at fd 3. Unguarded the payload's marker
// arrives, and so does the one written to the descriptor pidfd_getfd
// took; under nettrap neither does, and the shell lives on.
func TestEscapeProcMemOutside(t *testing.T) {
	needProcMem(t)
	e := newLabEnv(t)
	harness.ForUsers(t, []harness.User{harness.AsSelf, harness.AsNobody}, func(t *testing.T, u harness.User) {
		attack := func(t *testing.T, name string, flags []string, guarded bool) {
			ln := payloadListener(t, e)
			held := e.dialOutside(t, ln)
			defer held.Close()
			v := e.startVictim(t, u, true, []*os.File{held.sock}, "/bin/sh", "-c", "echo $$; while :; do sleep 0.1; done")
			marker := fmt.Sprintf("procmem outside %s %s;", u, name)
			stolen := fmt.Sprintf("stolen outside %s %s;", u, name)
			argv := []string{e.bins.Escapee, "procmem", v.pid, ln.Addr.String(), marker, "3", stolen}
			if !guarded {
				payload := mustInject(t, parseProcMem(t, e.run(t, u, argv...)), true)
				if payload {
					waitRecord(t, ln, "the payload's marker", func(r lab.Record) bool { return r.Seq != held.seq && r.Contains([]byte(marker)) })
				}
				waitRecord(t, ln, "the marker written to the taken descriptor", func(r lab.Record) bool {
					return r.Seq == held.seq && r.Contains([]byte(stolen))
				})
				if payload {
					v.mustDieOfPayload(t)
				}
				return
			}
			r := e.guarded(t, u, flags, argv...)
			mustRefuse(t, parseProcMem(t, r), r)
			v.mustLive(t)
			// The held connection's own sentinel, then a fresh one's.
			sentinel := fmt.Sprintf("held sentinel %s %s;", u, name)
			if _, err := held.Write([]byte(sentinel)); err != nil {
				t.Fatal(err)
			}
			waitRecord(t, ln, "the held connection's sentinel", func(r lab.Record) bool {
				return r.Seq == held.seq && r.Contains([]byte(sentinel))
			})
			if got := held.data(); got != sentinel {
				t.Errorf("LEAK under nettrap: the shell's connection carried %q, want %q", got, sentinel)
			}
			noPayloadArrived(t, e, ln, held.seq, "the outside shell attacked under nettrap "+name)
		}
		t.Run("unguarded", func(t *testing.T) {
			lab.OuterDenies(t, "pidfd_getfd and process_vm_writev on another process")
			attack(t, "unguarded", nil, false)
		})
		for _, mode := range procmemModes(u) {
			t.Run(mode.name, func(t *testing.T) { attack(t, mode.name, mode.flags, true) })
		}
	})
}

// runInDir runs argv inside as u in dir with env (the go command's runs).
func (e labEnv) runInDir(t *testing.T, u harness.User, dir string, env []string, argv ...string) labRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), harness.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = dir, env
	// A go command the payload killed leaves its test binary behind.
	cmd.WaitDelay = 10 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if u == harness.AsNobody {
		lab.AsNobody(cmd)
	}
	code := harness.ExitCode(e.Run(cmd))
	if code < 0 {
		t.Fatalf("%s: did not run\nstderr: %s", strings.Join(argv, " "), errb.String())
	}
	return labRun{stdout: lab.DropNotice(out.String()), stderr: lab.DropNotice(errb.String()), code: code}
}

// procmemMod is the attacking test's module, ready for u.
type procmemMod struct {
	base string   // u's directory: the module, its build cache, results
	mod  string   // the module: testdata/procmem with package procmem's source
	env  []string // the go command's environment
}

// procmemModule copies testdata/procmem and package procmem's source
// into a directory of u's, with a build cache of its own for the go
// command: its entries hard links to the test user's (read-only to
// others), so that neither user compiles the standard library again (a
// template compiled once where links cannot be made).
func procmemModule(t *testing.T, u harness.User) procmemMod {
	t.Helper()
	m := procmemMod{base: harness.OpenTempDir(t, "nettrap-procmem-", 0o755)}
	m.mod = filepath.Join(m.base, "mod")
	uid := -1
	if u == harness.AsNobody {
		uid = 65534
	}
	own := func(p string) error {
		if uid < 0 {
			return nil
		}
		return os.Lchown(p, uid, uid)
	}
	if err := own(m.base); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"go.mod":         filepath.Join("testdata", "procmem", "go.mod"),
		"attack_test.go": filepath.Join("testdata", "procmem", "attack_test.go"),
		"procmem.go":     filepath.Join("internal", "procmem", "procmem.go"),
	}
	if err := os.Mkdir(m.mod, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := own(m.mod); err != nil {
		t.Fatal(err)
	}
	for dst, src := range files {
		if err := copyFile(src, filepath.Join(m.mod, dst), own); err != nil {
			t.Fatal(err)
		}
	}
	cache := filepath.Join(m.base, "gocache")
	if err := linkTree(userGocache(), cache, own); err != nil {
		t.Logf("build cache not linked (%v): seeded from the template", err)
		os.RemoveAll(cache)
		if err := runmod.CopyTree(runmod.Gocache(t), cache); err == nil && uid >= 0 {
			err = filepath.WalkDir(cache, func(p string, _ fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				return own(p)
			})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	gopath := filepath.Join(m.base, "gopath")
	m.env = runmod.Env("GOCACHE="+cache, "GOPATH="+gopath, "GOMODCACHE="+filepath.Join(gopath, "pkg", "mod"), "HOME="+m.base)
	// Test-only switches of nettrap's (NETTRAP_TEST_NO_LANDLOCK) reach
	// the nettrap of the guarded runs, as they do escapee's.
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "NETTRAP_TEST_") && !strings.HasPrefix(kv, lab.VariantEnv+"=") {
			m.env = append(m.env, kv)
		}
	}
	return m
}

var (
	userGocacheOnce sync.Once
	userGocacheDir  string
)

// userGocache is the test user's build cache (go env GOCACHE).
func userGocache() string {
	userGocacheOnce.Do(func() {
		out, err := exec.Command("go", "env", "GOCACHE").Output()
		if err == nil {
			userGocacheDir = strings.TrimSpace(string(out))
		}
	})
	return userGocacheDir
}

// linkTree makes dst a copy of the directory src whose files in
// subdirectories (a build cache's entries) are hard links where no one
// but their owner may write them, and copies otherwise; own is called on
// every directory and copied file (never on a link, which is src's file).
func linkTree(src, dst string, own func(string) error) error {
	if src == "" || src == "off" || !filepath.IsAbs(src) {
		return fmt.Errorf("no build cache to link (%q)", src)
	}
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			if err := os.Mkdir(target, 0o755); err != nil {
				return err
			}
			return own(target)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if filepath.Dir(rel) != "." && info.Mode().Perm()&0o022 == 0 {
			return os.Link(p, target)
		}
		return copyFile(p, target, own)
	})
}

// copyFile copies the file src to dst (mode 0644) and calls own on it.
func copyFile(src, dst string, own func(string) error) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		return err
	}
	return own(dst)
}
