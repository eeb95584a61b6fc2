package netsem

import (
	"embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/nettrap/nettrap/integration/internal/prebuilt"
)

//go:embed csrc/*.c csrc/*.h nopidfd/*.c
var csrc embed.FS

// Tell is the line that differs by design: where a blocked connect waits.
const Tell = "tell"

// Programs are the built programs, in a directory every user can read.
type Programs struct {
	Netsem string
	// NoPidfd runs a command where pidfd_getfd fails with EPERM, as under
	// Docker's default seccomp profile without CAP_SYS_PTRACE: nettrap
	// cannot emulate there.
	NoPidfd string
}

var (
	once     sync.Once
	dir      string
	progs    Programs
	buildErr error
)

// Build compiles the programs (once per test binary), or takes them from
// NETTRAP_TEST_PREBUILT's directory (package prebuilt), where a missing one
// fails t. Without gcc t skips, or fails when CI=true; a program that does
// not compile fails t.
func Build(t testing.TB) Programs {
	t.Helper()
	if prebuilt.Dir() != "" {
		p, err := fromPrebuilt()
		if err != nil {
			t.Fatalf("netsem: %v", err)
		}
		return p
	}
	if _, err := exec.LookPath("gcc"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("netsem: %v (CI=true, so this is fatal)", err)
		}
		t.Skipf("netsem: %v", err)
	}
	once.Do(func() { progs, buildErr = buildAll() })
	if buildErr != nil {
		t.Fatalf("netsem: %v", buildErr)
	}
	return progs
}

func buildAll() (Programs, error) {
	var p Programs
	var err error
	if dir, err = os.MkdirTemp("", "nettrap-netsem-"); err != nil {
		return p, err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return p, err
	}
	if p.Netsem, err = build("csrc", "netsem"); err != nil {
		return p, err
	}
	p.NoPidfd, err = build("nopidfd", "nopidfd")
	return p, err
}

// fromPrebuilt takes both programs from the prebuilt directory, which
// scripts/kernels.sh builds with build's flags.
func fromPrebuilt() (Programs, error) {
	var p Programs
	var err error
	if p.Netsem, _, err = prebuilt.Lookup("netsem"); err != nil {
		return p, err
	}
	p.NoPidfd, _, err = prebuilt.Lookup("nopidfd")
	return p, err
}

// Cleanup removes the program; call it after m.Run.
func Cleanup() {
	if dir != "" {
		os.RemoveAll(dir)
	}
}

// build compiles the C files of src into dir/name.
func build(src, name string) (string, error) {
	files, err := csrc.ReadDir(src)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Join(dir, "src", src), 0o755); err != nil {
		return "", err
	}
	args := []string{"-O1", "-Wall", "-Werror", "-pthread", "-o", filepath.Join(dir, name)}
	for _, f := range files {
		code, err := csrc.ReadFile(src + "/" + f.Name())
		if err != nil {
			return "", err
		}
		p := filepath.Join(dir, "src", src, f.Name())
		if err := os.WriteFile(p, code, 0o644); err != nil {
			return "", err
		}
		if strings.HasSuffix(p, ".c") {
			args = append(args, p)
		}
	}
	if out, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("gcc %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return filepath.Join(dir, name), os.Chmod(filepath.Join(dir, name), 0o755)
}

// Lines splits netsem's output into its result lines by name, in order.
// A name printed twice is an error.
func Lines(out string) (names []string, results map[string]string, err error) {
	results = map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		name, res, ok := strings.Cut(l, ": ")
		if !ok {
			return nil, nil, fmt.Errorf("not a result line: %q", l)
		}
		if _, dup := results[name]; dup {
			return nil, nil, fmt.Errorf("%s printed twice", name)
		}
		names = append(names, name)
		results[name] = res
	}
	return names, results, nil
}
