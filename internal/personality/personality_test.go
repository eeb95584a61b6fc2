package personality

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// testArgv0 is a personality of this test binary: it says whether it
// runs on the main thread and what arguments it got, and exits 7.
const testArgv0 = "nettrap-personality-test"

// noInitEnv makes this test binary, re-exec'd, skip the dispatch (a
// binary that forgot it) and say what Check then says.
const noInitEnv = "NETTRAP_PERSONALITY_TEST_NO_INIT"

func init() {
	Register(testArgv0, func() int {
		fmt.Printf("main-thread=%v args=%s\n", unix.Gettid() == unix.Getpid(), strings.Join(os.Args[1:], ","))
		return 7
	})
	// This binary links no stub: the name is free to report what a
	// stub would be.
	Register(TracedStub, printDumpable)
}

// printDumpable says whether the process is dumpable, as this package's
// init left it.
func printDumpable() int {
	d, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
	if err != nil {
		fmt.Println(err)
		return 1
	}
	fmt.Printf("dumpable=%d\n", d)
	return 0
}

// dumpableEnv makes this test binary, re-exec'd under any name that is
// no registered personality, say whether it is dumpable.
const dumpableEnv = "NETTRAP_PERSONALITY_TEST_DUMPABLE"

func TestMain(m *testing.M) {
	if os.Getenv(dumpableEnv) != "" && os.Args[0] != TracedStub {
		os.Exit(printDumpable())
	}
	if os.Getenv(noInitEnv) != "" {
		fmt.Printf("check: %v\n", Check())
		os.Exit(0)
	}
	Init()
	os.Exit(m.Run())
}

// self runs this test binary again with argv, argv[0] included.
func self(t *testing.T, env []string, argv ...string) (string, error) {
	t.Helper()
	path, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := &exec.Cmd{Path: path, Args: argv, Env: append(os.Environ(), env...)}
	out, err := cmd.Output()
	return string(out), err
}

// A binary re-exec'd under a registered argv[0] runs that personality,
// on the main thread, with its arguments, and exits with its status:
// never its own main (here, the tests).
func TestPersonalityDispatched(t *testing.T) {
	out, err := self(t, nil, testArgv0, "a", "b")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 7 {
		t.Fatalf("exit %v, want status 7 (the personality's)\n%s", err, out)
	}
	if want := "main-thread=true args=a,b\n"; out != want {
		t.Errorf("output %q, want %q", out, want)
	}
}

// Any other argv[0] runs the binary's own main, and Init returns.
func TestPersonalityOtherNamesRunMain(t *testing.T) {
	out, err := self(t, nil, "nettrap-personality-unknown", "-test.run=^TestPersonalityCheckAfterInit$", "-test.v")
	if err != nil || !strings.Contains(out, "--- PASS: TestPersonalityCheckAfterInit") {
		t.Errorf("exit %v, want the tests to run and pass:\n%s", err, out)
	}
}

func TestPersonalityCheckAfterInit(t *testing.T) {
	if err := Check(); err != nil || !Dispatches() {
		t.Errorf("Check after Init: %v (Dispatches %v), want nil", err, Dispatches())
	}
}

// A binary that never called Init is told so, in words that say what
// to add.
func TestPersonalityCheckWithoutInit(t *testing.T) {
	out, err := self(t, []string{noInitEnv + "=1"}, os.Args[0])
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if want := "check: " + ErrNotDispatched.Error() + "\n"; out != want {
		t.Errorf("output %q, want %q", out, want)
	}
	if !strings.Contains(ErrNotDispatched.Error(), "personality.Init in main or TestMain") {
		t.Errorf("ErrNotDispatched %q does not say where to dispatch", ErrNotDispatched)
	}
}

// Every personality but the stub is non-dumpable from this package's
// init on, so that a process of the same user cannot write into it
// through /proc/PID/mem; the stub stays dumpable, for its tracer.
func TestPersonalitiesNotDumpable(t *testing.T) {
	for argv0, want := range map[string]string{
		testArgv0 + "-dumpable": "dumpable=0\n", // not registered: main below
		TracedStub:              "dumpable=1\n",
	} {
		out, err := self(t, []string{dumpableEnv + "=1"}, argv0)
		if err != nil || out != want {
			t.Errorf("%s: %q, %v; want %q", argv0, out, err, want)
		}
	}
	if out, err := self(t, []string{dumpableEnv + "=1"}, "not-a-personality"); err != nil || out != "dumpable=1\n" {
		t.Errorf("a binary under another name: %q, %v; want it dumpable", out, err)
	}
}

// Register refuses a name the init could not know for a personality's.
func TestRegisterWantsPrefix(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Register took a name without the prefix")
		}
	}()
	Register("reaper", func() int { return 0 })
}
