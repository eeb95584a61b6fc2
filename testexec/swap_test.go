package testexec

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

// workBinary copies this test binary (a Go test binary) to a go-build
// work directory's shape: DIR/go-buildN/b001/testexec.test.
func workBinary(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "go-build123", "b001")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	path := filepath.Join(dir, "testexec.test")
	dst, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestInWorkDir(t *testing.T) {
	for path, want := range map[string]bool{
		"/tmp/go-build123/b001/pkg.test":      true,
		"/tmp/go-build123/b0017/pkg.test":     true,
		"/tmp/go-build123/b001/pkg":           false,
		"/tmp/go-build123/bx01/pkg.test":      false,
		"/tmp/other/b001/pkg.test":            false,
		"/tmp/go-build123/b001/sub/pkg.test":  false,
		"/tmp/go-build123/b/pkg.test":         false,
		"/home/u/go-build9/b12/../b1/x.test":  true,
		"/tmp/go-build123/b001/pkg.test.real": false,
	} {
		if got := InWorkDir(path); got != want {
			t.Errorf("InWorkDir(%q) = %v, want %v", path, got, want)
		}
	}
}

// TestSwapRoundTrip: Swap leaves a symlink to nettrap where the binary
// was, Wrapped finds the real binary through it, Restore puts it back.
func TestSwapRoundTrip(t *testing.T) {
	path := workBinary(t)
	self := filepath.Join(t.TempDir(), "nettrap")
	if _, ok := Wrapped(path, self); ok {
		t.Fatal("Wrapped before Swap")
	}
	if err := Swap(path, self); err != nil {
		t.Fatal(err)
	}
	if target, err := os.Readlink(path); err != nil || target != self {
		t.Fatalf("after Swap, %s links to %q (%v), want %q", path, target, err, self)
	}
	if err := Swap(path, self); err != nil {
		t.Errorf("a second Swap of a wrapped binary: %v, want nil", err)
	}
	real, ok := Wrapped(path, self)
	if !ok || real != path+RealSuffix {
		t.Fatalf("Wrapped = %q, %v; want %q", real, ok, path+RealSuffix)
	}
	if !IsTestBinary(real) {
		t.Errorf("the real binary %s is not a test binary", real)
	}
	if _, ok := Wrapped(path, "/other/nettrap"); ok {
		t.Error("Wrapped for a symlink to another executable")
	}
	if err := Restore(path, self); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Lstat(path); err != nil || !st.Mode().IsRegular() {
		t.Fatalf("after Restore, %s: %v %v, want the regular file back", path, st, err)
	}
	if _, err := os.Lstat(real); !os.IsNotExist(err) {
		t.Errorf("after Restore, %s still exists (%v)", real, err)
	}
	if err := Restore(path, self); err == nil {
		t.Error("Restore of a binary that is not wrapped succeeded")
	}
}

// TestSwapRefuses: Swap renames nothing that is not a test binary, does
// not follow a symlink in place of the binary or of its directory, and
// overwrites no file at the real binary's name.
func TestSwapRefuses(t *testing.T) {
	self := filepath.Join(t.TempDir(), "nettrap")
	t.Run("not a test binary", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "go-build1", "b001", "x.test")
		os.MkdirAll(filepath.Dir(path), 0o755)
		os.WriteFile(path, []byte("#!/bin/sh\n"), 0o755)
		if err := Swap(path, self); err == nil {
			t.Error("Swap of a script succeeded")
		}
		if st, err := os.Lstat(path); err != nil || !st.Mode().IsRegular() {
			t.Errorf("the script was moved: %v %v", st, err)
		}
	})
	t.Run("symlink as the binary", func(t *testing.T) {
		target := workBinary(t)
		path := filepath.Join(t.TempDir(), "go-build1", "b001", "x.test")
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.Symlink(target, path); err != nil {
			t.Fatal(err)
		}
		if err := Swap(path, self); err == nil {
			t.Error("Swap through a symlink succeeded")
		}
		if target2, _ := os.Readlink(path); target2 != target {
			t.Errorf("the symlink changed to %q", target2)
		}
	})
	t.Run("symlink as the directory", func(t *testing.T) {
		real := workBinary(t)
		link := filepath.Join(t.TempDir(), "go-build1", "b002")
		os.MkdirAll(filepath.Dir(link), 0o755)
		if err := os.Symlink(filepath.Dir(real), link); err != nil {
			t.Fatal(err)
		}
		if err := Swap(filepath.Join(link, filepath.Base(real)), self); err == nil {
			t.Error("Swap in a symlinked directory succeeded")
		}
		if st, err := os.Lstat(real); err != nil || !st.Mode().IsRegular() {
			t.Errorf("the binary behind the symlink was moved: %v %v", st, err)
		}
	})
	t.Run("real name taken", func(t *testing.T) {
		path := workBinary(t)
		os.WriteFile(path+RealSuffix, []byte("someone's"), 0o644)
		if err := Swap(path, self); err == nil {
			t.Error("Swap over an existing real name succeeded")
		}
		if b, _ := os.ReadFile(path + RealSuffix); string(b) != "someone's" {
			t.Error("the file at the real name was overwritten")
		}
	})
}

// TestUncache: the test log named by -test.testlogfile is emptied, which
// the go command cannot parse (it wants "# test log" first).
func TestUncache(t *testing.T) {
	log := filepath.Join(t.TempDir(), "testlog.txt")
	os.WriteFile(log, []byte("# test log\ngetenv HOME\n"), 0o644)
	ok, err := Uncache([]string{"x.test", "-test.paniconexit0", "-test.testlogfile=" + log, "-test.v=test2json"})
	if !ok || err != nil {
		t.Fatalf("Uncache = %v, %v", ok, err)
	}
	if b, _ := os.ReadFile(log); len(b) != 0 {
		t.Errorf("the log holds %q, want nothing", b)
	}
	if ok, _ := Uncache([]string{"x.test", "-args", "-test.testlogfile=" + log}); ok {
		t.Error("Uncache took an argument after -args")
	}
	link := filepath.Join(t.TempDir(), "link.txt")
	os.Symlink(log, link)
	os.WriteFile(log, []byte("# test log\n"), 0o644)
	if _, err := Uncache([]string{"x.test", "-test.testlogfile=" + link}); err == nil {
		t.Error("Uncache followed a symlink")
	}
}
