package lab

import (
	"embed"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/nettrap/nettrap/integration/internal/prebuilt"
	"github.com/nettrap/nettrap/integration/internal/victimbuild"
)

// EscapeePkg is the 64-bit helper program the escape tests run.
const EscapeePkg = "github.com/nettrap/nettrap/integration/internal/escapee"

//go:embed csrc/*.c
var csrc embed.FS

// Bins are the programs of the lab, in a directory every user can read,
// so that the unprivileged variants can run them as nobody.
type Bins struct {
	// Nettrap is what the tests run as nettrap: under an engine variant
	// (NETTRAP_TEST_ENGINE, see Variant) a script that starts Plain so.
	Nettrap  string
	Plain    string // the nettrap binary itself
	Escapee  string // 64-bit Go helper (package escapee)
	Victim   string // the victim program (victimbuild.Victim)
	Escape32 string // 32-bit static C program: i386 syscalls only
	Holder   string // 64-bit static C program holding a socket for others to abuse
	// ParentListen is a seccomp listener above nettrap (csrc/parentlisten.c).
	ParentListen string
	// OptFlip sets a socket option another thread flips (csrc/optflip.c).
	OptFlip string
	// Swapper races an allowed call against a descriptor swap
	// (csrc/swapper.c).
	Swapper string

	// no32 says why Escape32 could not be built (no gcc -m32); see Need32.
	no32 error
	// noExec32 says why the kernel cannot run it (IA32 emulation off).
	noExec32 error
}

// Need32 skips t (fails it when CI=true) when the 32-bit program could not
// be built: gcc needs Debian's gcc-multilib for -m32. It fails t whatever
// CI says when a prebuilt directory (NETTRAP_TEST_PREBUILT) lacks it, and
// skips t off amd64, where there is no i386 ABI to escape through.
func (b Bins) Need32(t testing.TB) {
	t.Helper()
	if runtime.GOARCH != "amd64" {
		t.Skipf("lab: the i386 ABI is amd64's; this is %s", runtime.GOARCH)
	}
	if errors.Is(b.no32, prebuilt.ErrMissing) {
		t.Fatalf("lab: %v", b.no32)
	}
	if b.noExec32 != nil {
		// A property of the kernel, not of the machine's setup: nothing
		// i386 runs there, so there is nothing to guard, even under CI.
		t.Skipf("lab: the kernel cannot run 32-bit programs: %v", b.noExec32)
	}
	if b.no32 == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("lab: no 32-bit program (CI=true, so this is fatal): %v", b.no32)
	}
	t.Skipf("lab: no 32-bit program: %v", b.no32)
}

var (
	binMu   sync.Mutex
	binDir  string
	bins    *Bins
	binsErr error
)

// Programs builds (once per test binary) and returns the lab's programs,
// or takes them from NETTRAP_TEST_PREBUILT's directory (package prebuilt).
// Without gcc t skips, or fails when CI=true; a program missing from the
// prebuilt directory always fails t. Tests of the 32-bit program also call
// Need32.
func Programs(t testing.TB) Bins {
	t.Helper()
	nettrap, escapee, victim := victimbuild.Nettrap(t), victimbuild.Build(t, EscapeePkg), victimbuild.Victim(t)
	binMu.Lock()
	defer binMu.Unlock()
	if bins == nil && binsErr == nil {
		bins, binsErr = buildBins(nettrap, escapee, victim)
	}
	if binsErr != nil {
		if errors.Is(binsErr, prebuilt.ErrMissing) {
			t.Fatalf("lab programs: %v", binsErr)
		}
		if os.Getenv("CI") == "true" {
			t.Fatalf("lab programs: %v (CI=true, so this is fatal)", binsErr)
		}
		t.Skipf("lab programs: %v", binsErr)
	}
	return *bins
}

// Cleanup removes the programs; call it after m.Run.
func Cleanup() {
	if binDir != "" {
		os.RemoveAll(binDir)
	}
}

func buildBins(nettrap, escapee, victim string) (*Bins, error) {
	dir, err := os.MkdirTemp("", "nettrap-lab-bin-")
	if err != nil {
		return nil, err
	}
	binDir = dir
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, err
	}
	b := &Bins{}
	for _, c := range []struct {
		dst *string
		src string
	}{{&b.Plain, nettrap}, {&b.Escapee, escapee}, {&b.Victim, victim}} {
		data, err := os.ReadFile(c.src)
		if err != nil {
			return nil, err
		}
		*c.dst = filepath.Join(dir, filepath.Base(c.src))
		if err := os.WriteFile(*c.dst, data, 0o755); err != nil {
			return nil, err
		}
	}
	// Only amd64 has an i386 ABI (Need32 skips elsewhere): an arm64
	// prebuilt directory has no escape32.
	if runtime.GOARCH == "amd64" {
		b.Escape32, b.no32 = gcc(dir, "escape32.c", "-m32", "-static")
		if b.no32 == nil {
			b.noExec32 = canExec(b.Escape32)
		}
	} else {
		b.no32 = fmt.Errorf("no i386 ABI on %s", runtime.GOARCH)
	}
	// Static and not position-independent: its buffer sits below 4 GiB,
	// where a 32-bit process_vm_writev can name it.
	if b.Holder, err = gcc(dir, "holder.c", "-static", "-no-pie"); err != nil {
		return nil, err
	}
	if b.ParentListen, err = gcc(dir, "parentlisten.c", "-static", "-pthread"); err != nil {
		return nil, err
	}
	if b.OptFlip, err = gcc(dir, "optflip.c", "-static", "-pthread"); err != nil {
		return nil, err
	}
	if b.Swapper, err = gcc(dir, "swapper.c", "-static", "-pthread"); err != nil {
		return nil, err
	}
	v, err := CurrentVariant()
	if err != nil {
		return nil, err
	}
	b.Nettrap, err = wrap(dir, b.Plain, b.ParentListen, v)
	return b, err
}

// gcc compiles csrc/src into dir, or takes it (by src's name without .c)
// from the prebuilt directory, which scripts/kernels.sh builds with the same
// flags.
func gcc(dir, src string, flags ...string) (string, error) {
	if p, used, err := prebuilt.Lookup(strings.TrimSuffix(src, ".c")); used {
		return p, err
	}
	code, err := csrc.ReadFile("csrc/" + src)
	if err != nil {
		return "", err
	}
	srcPath := filepath.Join(dir, src)
	if err := os.WriteFile(srcPath, code, 0o644); err != nil {
		return "", err
	}
	out := strings.TrimSuffix(srcPath, ".c")
	args := append(append([]string{"-O1", "-Wall", "-Werror", "-o", out}, flags...), srcPath)
	if b, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("gcc %s: %w\n%s", strings.Join(args, " "), err, b)
	}
	return out, os.Chmod(out, 0o755)
}

// canExec tells whether the kernel runs bin at all: ENOEXEC where the
// kernel has no IA32 emulation (or has it off: ia32_emulation=0).
func canExec(bin string) error {
	err := exec.Command(bin).Run()
	if errors.Is(err, syscall.ENOEXEC) {
		return err
	}
	return nil
}
