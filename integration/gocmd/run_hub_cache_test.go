package gocmd

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/nettrap/nettrap/integration/internal/fakehost"
	"github.com/nettrap/nettrap/integration/internal/harness"
	"github.com/nettrap/nettrap/integration/internal/lab"
	"github.com/nettrap/nettrap/integration/internal/runmod"
)

// cacheMakefile writes a Makefile whose targets run go test without
// -count=1 (so the go command may cache), and returns its path for make -f.
func cacheMakefile(t *testing.T) string {
	t.Helper()
	mk := filepath.Join(t.TempDir(), "Makefile")
	text := "test:\n\tgo test ./clean/ ./leaky/\n" +
		"replaced:\n\tGODEBUG=x=1 go test ./clean/\n" +
		"appended:\n\tGODEBUG=$$GODEBUG,x=1 go test ./clean/\n"
	if err := os.WriteFile(mk, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return mk
}

// TestRunHubMakeCache: `nettrap -- make test` keeps Go's test cache as
// `nettrap -- go test` does: a bare run's results are not taken, a second
// run with nothing changed serves the clean package from the cache, and
// the leaky package fails both times with nettrap's line (never cached).
func TestRunHubMakeCache(t *testing.T) {
	requireMake(t)
	h := fakehost.Start(t, leakEndpoint, markedEndpoint)
	env := cacheEnv(t)
	mk := cacheMakefile(t)
	// Bare: the tests swallow their errors, both packages pass and are
	// cached.
	bare := runModIn(t, env, "make", "-f", mk, "test")
	if bare.Code != 0 {
		t.Fatalf("bare run: exit %d, want 0\n%s%s", bare.Code, bare.Stdout, bare.Stderr)
	}
	twoMakeRuns(t, h, func(int) (harness.Run, string) {
		log := harness.AuditPath(t)
		return runModIn(t, env, harness.Nettrap(t), "--audit-log", log, "--", "make", "-f", mk, "test"), log
	})
}

// twoMakeRuns runs make test under nettrap twice (run, given the run's
// number, returns its result and audit log): both times make fails on
// the leaky package, whose attempt is denied with nothing arriving, and
// the clean package passes, served from the cache the second time.
func twoMakeRuns(t *testing.T, h *fakehost.Host, run func(i int) (harness.Run, string)) {
	t.Helper()
	for i, step := range []string{"first run under nettrap", "second run under nettrap"} {
		mark := h.Mark()
		r, log := run(i)
		if r.Code != 2 {
			t.Fatalf("%s: exit %d, want make's 2\n%s%s", step, r.Code, r.Stdout, r.Stderr)
		}
		wantPkg(t, r, step, "clean", "ok", i == 1)
		wantPkg(t, r, step, "leaky", "FAIL", false)
		checkHubLeaky(t, h, mark, r, log)
		if strings.Contains(r.Stderr, "not starting it") {
			t.Errorf("%s: nettrap refused an exec:\n%s", step, r.Stderr)
		}
	}
}

// TestRunHubMakeCacheOneProc: TestRunHubMakeCache with one P
// (GOMAXPROCS=1, for nettrap, make's go commands and the inner nettraps)
// and no user namespace of the command's own: as root with --userns=off,
// and as nobody. Every start there is a vfork whose execve the filter
// traps: nettrap's own of make, the go command's of its test binaries, an
// inner nettrap's of its real binary. None may hang, and the second run
// must still serve the clean package from the cache (such runs once kept
// -exec, uncached, for fear of the hang).
func TestRunHubMakeCacheOneProc(t *testing.T) {
	lab.SlowUnderOuter(t, "32 s")
	requireMake(t)
	users := []harness.User{harness.AsSelf}
	if os.Geteuid() == 0 {
		users = append(users, harness.AsNobody)
	}
	harness.ForUsers(t, users, func(t *testing.T, u harness.User) {
		h := fakehost.Start(t, leakEndpoint, markedEndpoint)
		dir, cred, env := makeCacheAs(t, u)
		env = append(env, "GOMAXPROCS=1")
		nt := filepath.Join(dir, "nettrap")
		bare := runModAt(t, filepath.Join(dir, "mod"), cred, env, "make", "test")
		if bare.Code != 0 {
			t.Fatalf("bare run: exit %d, want 0\n%s%s", bare.Code, bare.Stdout, bare.Stderr)
		}
		twoMakeRuns(t, h, func(i int) (harness.Run, string) {
			log := filepath.Join(dir, fmt.Sprintf("audit%d.jsonl", i))
			return runModAt(t, filepath.Join(dir, "mod"), cred, env, nt, "--userns=off", "--audit-log", log, "--", "make", "test"), log
		})
	})
}

// makeCacheAs prepares a make-cache run as u in a directory u owns (nobody
// cannot enter the test's temporary directories): a copy of the fixture
// module (mod) whose Makefile's test runs go test ./clean/ ./leaky/
// without -count=1, nettrap's binary, and a build cache seeded like
// cacheEnv's. It returns the directory, the credential to run as (nil:
// the test's own user) and the environment.
func makeCacheAs(t *testing.T, u harness.User) (dir string, cred *syscall.Credential, env []string) {
	t.Helper()
	dir = harness.OpenTempDir(t, "nettrap-makecache-", 0o755)
	mod, gocache := filepath.Join(dir, "mod"), filepath.Join(dir, "gocache")
	if err := runmod.CopyTree(runmod.Dir(t), mod); err != nil {
		t.Fatal(err)
	}
	mk := "test:\n\tgo test ./clean/ ./leaky/\n"
	if err := os.WriteFile(filepath.Join(mod, "Makefile"), []byte(mk), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := runmod.CopyTree(runmod.Gocache(t), gocache); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(harness.Nettrap(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "nettrap"), b, 0o755); err != nil {
		t.Fatal(err)
	}
	env = runmod.Env("GOCACHE="+gocache, "GOPATH="+filepath.Join(dir, "gopath"), "HOME="+dir)
	if u != harness.AsNobody {
		return dir, nil, env
	}
	err = filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, 65534, 65534)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir, &syscall.Credential{Uid: 65534, Gid: 65534}, env
}

// TestRunHubMakeGodebug: a Makefile or script that replaces (or drops)
// GODEBUG for its go test would take a bare run's cached results: the go
// command is not started, with the reason; one that adds to GODEBUG
// runs, and --cache=off runs the replaced one through -exec.
func TestRunHubMakeGodebug(t *testing.T) {
	requireMake(t)
	env := cacheEnv(t)
	mk := cacheMakefile(t)
	nt := harness.Nettrap(t)
	if bare := runModIn(t, env, "go", "test", "./clean/"); bare.Code != 0 {
		t.Fatalf("bare run: exit %d\n%s%s", bare.Code, bare.Stdout, bare.Stderr)
	}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"replaced", []string{"--", "make", "-f", mk, "replaced"}, "GODEBUG=x=1, which replaces nettrap's nettrapcfg="},
		{"dropped", []string{"--", "sh", "-c", "env -u GODEBUG go test ./clean/"}, "test is started without GODEBUG"},
	} {
		run := runModIn(t, env, nt, c.args...)
		if run.Code == 0 {
			t.Errorf("%s: exit 0, want a failure\n%s%s", c.name, run.Stdout, run.Stderr)
		}
		if !strings.Contains(run.Stderr, c.want) || !strings.Contains(run.Stderr, "--cache=off") {
			t.Errorf("%s: stderr lacks %q and the advice:\n%s", c.name, c.want, run.Stderr)
		}
		if line := pkgLine(run.Stdout, "clean"); line != "" {
			t.Errorf("%s: the go command ran: %q", c.name, line)
		}
	}
	run := runModIn(t, env, nt, "--", "make", "-f", mk, "appended")
	if run.Code != 0 {
		t.Fatalf("appended: exit %d, want 0\n%s%s", run.Code, run.Stdout, run.Stderr)
	}
	wantPkg(t, run, "appended", "clean", "ok", false)
	run = runModIn(t, env, nt, "--cache=off", "--", "make", "-f", mk, "replaced")
	if run.Code != 0 {
		t.Fatalf("--cache=off: exit %d, want 0\n%s%s", run.Code, run.Stdout, run.Stderr)
	}
	wantPkg(t, run, "--cache=off", "clean", "ok", false)
}
