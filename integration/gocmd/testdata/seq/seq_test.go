// Package seq holds sequential tests, one per way a test can reach (or be
// allowed to reach) the network. Each dials its own port of fx.External,
// so that a blocked destination names the test that made the attempt.
package seq

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"

	"example.com/fixtures/fx"
)

// childPort makes the binary a subprocess that dials and exits.
const childPort = "FIXTURE_CHILD_PORT"

func TestMain(m *testing.M) {
	if p := os.Getenv(childPort); p != "" {
		port, _ := strconv.Atoi(p)
		fmt.Println("child:", fx.Dial(fx.External, port, "TestSubprocess"))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestClean(t *testing.T) {
	t.Log("no network here")
}

func TestLeak(t *testing.T) {
	if err := fx.Dial(fx.External, 1001, t.Name()); err != nil {
		t.Logf("dial failed, carrying on: %v", err)
	}
}

func TestSwallowed(t *testing.T) {
	_ = fx.Dial(fx.External, 1002, t.Name())
}

func TestGoroutine(t *testing.T) {
	var wg sync.WaitGroup
	wg.Go(func() { _ = fx.Send(fx.External, 1003, "TestGoroutine") })
	wg.Wait()
}

func TestSubprocess(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childPort+"=1004")
	out, err := cmd.CombinedOutput()
	t.Logf("subprocess: %v %s", err, out)
}

func TestCleanup(t *testing.T) {
	t.Cleanup(func() { _ = fx.Dial(fx.External, 1005, "TestCleanup") })
}

func TestSkipAfterAttempt(t *testing.T) {
	if err := fx.Dial(fx.External, 1006, t.Name()); err != nil {
		t.Skipf("no network: %v", err)
	}
}

func TestSubtests(t *testing.T) {
	t.Run("clean", func(t *testing.T) {})
	t.Run("leak", func(t *testing.T) { _ = fx.Dial(fx.External, 1007, t.Name()) })
	t.Run("after", func(t *testing.T) {})
}

func TestMarked(t *testing.T) {
	t.Attr("nettrap", "network")
	if err := fx.Dial(fx.External, 1008, t.Name()); err != nil {
		t.Fatalf("marked test could not dial: %v", err)
	}
}

func TestSiblingAfterMarked(t *testing.T) {
	_ = fx.Dial(fx.External, 1009, t.Name())
}

func TestMarkedParent(t *testing.T) {
	t.Attr("nettrap", "network")
	t.Cleanup(func() {
		if err := fx.Dial(fx.External, 1012, "TestMarkedParent/cleanup"); err != nil {
			t.Errorf("marked test's cleanup could not dial: %v", err)
		}
	})
	for i, name := range []string{"a", "b"} {
		t.Run(name, func(t *testing.T) {
			if err := fx.Dial(fx.External, 1010+i, t.Name()); err != nil {
				t.Fatalf("subtest of a marked test could not dial: %v", err)
			}
		})
	}
}

func TestStale(t *testing.T) {
	t.Attr("nettrap", "network")
}

func TestBogusAttr(t *testing.T) {
	t.Attr("nettrap", "bogus")
}

// TestAllowFlag is allowed only when run with --allow-test.
func TestAllowFlag(t *testing.T) {
	if err := fx.Dial(fx.External, 1013, t.Name()); err != nil {
		t.Logf("dial: %v", err)
	}
}

func TestLast(t *testing.T) {}
