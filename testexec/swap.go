package testexec

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/gotest"
)

// RealSuffix names the real test binary next to the symlink that stands
// in its place.
const RealSuffix = ".nettrap-real"

// InWorkDir tells whether path has the shape of a test binary the go
// command built: $WORK/bNNN/NAME.test, $WORK being a go-build directory.
func InWorkDir(path string) bool {
	dir, name := filepath.Split(filepath.Clean(path))
	dir = filepath.Clean(dir)
	b := filepath.Base(dir)
	return strings.HasSuffix(name, ".test") && len(b) > 1 && b[0] == 'b' && allDigits(b[1:]) &&
		strings.HasPrefix(filepath.Base(filepath.Dir(dir)), "go-build")
}

func allDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

// openDir opens the directory of path, not following it if it is a
// symlink, and checks that this user owns it (the go command made it).
func openDir(path string) (fd int, name string, err error) {
	dir, name := filepath.Split(filepath.Clean(path))
	fd, err = unix.Open(filepath.Clean(dir), unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, "", fmt.Errorf("open %s: %w", dir, os.NewSyscallError("open", err))
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, "", fmt.Errorf("stat %s: %w", dir, os.NewSyscallError("fstat", err))
	}
	if int(st.Uid) != os.Geteuid() {
		unix.Close(fd)
		return -1, "", fmt.Errorf("%s belongs to uid %d, not to this user", dir, st.Uid)
	}
	return fd, name, nil
}

// isTestBinary tells whether name in dir is a regular file that is a Go
// test binary (gotest.ReadBinary); a symlink is not.
func isTestBinary(dir int, name string) (bool, error) {
	fd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, os.NewSyscallError("openat", err)
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return false, err
	}
	_, ok := gotest.ReadBinary(f)
	return ok, nil
}

// IsTestBinary tells whether path (not followed if a symlink) is a Go
// test binary.
func IsTestBinary(path string) bool {
	dir, name, err := openDir(path)
	if err != nil {
		return false
	}
	defer unix.Close(dir)
	ok, _ := isTestBinary(dir, name)
	return ok
}

// linksTo tells whether name in dir is a symlink to target.
func linksTo(dir int, name, target string) bool {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(dir, name, buf)
	return err == nil && string(buf[:n]) == target
}

// Swap puts a symlink to self at path, a test binary, and the binary at
// path+RealSuffix. A path that is a symlink to self already is left as
// it is (the binary is wrapped).
func Swap(path, self string) error {
	dir, name, err := openDir(path)
	if err != nil {
		return err
	}
	defer unix.Close(dir)
	if linksTo(dir, name, self) {
		return nil
	}
	ok, err := isTestBinary(dir, name)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	if !ok {
		return fmt.Errorf("%s is not a Go test binary", path)
	}
	// RENAME_NOREPLACE: a file already at the real binary's name is not
	// ours to overwrite.
	if err := unix.Renameat2(dir, name, dir, name+RealSuffix, unix.RENAME_NOREPLACE); err != nil {
		return fmt.Errorf("rename %s: %w", path, os.NewSyscallError("renameat2", err))
	}
	if err := unix.Symlinkat(self, dir, name); err != nil {
		// Put the binary back; the exec then fails (fail closed) or
		// runs it unwrapped only if the caller lets it.
		unix.Renameat2(dir, name+RealSuffix, dir, name, unix.RENAME_NOREPLACE)
		return fmt.Errorf("symlink %s: %w", path, os.NewSyscallError("symlinkat", err))
	}
	return nil
}

// Wrapped tells whether argv0, the path this nettrap was started as, is
// a symlink to self that Swap put in place of a test binary, and returns
// the real binary.
func Wrapped(argv0, self string) (real string, ok bool) {
	if !filepath.IsAbs(argv0) || !strings.HasSuffix(argv0, ".test") {
		return "", false
	}
	dir, name, err := openDir(argv0)
	if err != nil {
		return "", false
	}
	defer unix.Close(dir)
	if !linksTo(dir, name, self) {
		return "", false
	}
	var st unix.Stat_t
	if err := unix.Fstatat(dir, name+RealSuffix, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return "", false
	}
	return argv0 + RealSuffix, true
}

// Restore puts the real binary back at path, in place of the symlink to
// self (one atomic rename).
func Restore(path, self string) error {
	dir, name, err := openDir(path)
	if err != nil {
		return err
	}
	defer unix.Close(dir)
	if !linksTo(dir, name, self) {
		return errors.New(path + " is no longer nettrap's symlink; leaving " + name + RealSuffix + " as it is")
	}
	if err := unix.Renameat(dir, name+RealSuffix, dir, name); err != nil {
		return fmt.Errorf("put back %s: %w", path, os.NewSyscallError("renameat", err))
	}
	return nil
}

// Uncache keeps the go command from caching a passing run: it empties
// the test log named by the binary's -test.testlogfile argument, which
// the go command then cannot read (it needs the log's header), so it
// stores no result. False when argv names no test log.
func Uncache(argv []string) (bool, error) {
	if v, ok := testlog(argv); ok {
		return true, truncate(v)
	}
	return false, nil
}

// testlog is the test log a test binary's argv names.
func testlog(argv []string) (string, bool) {
	for _, a := range argv[1:] {
		if a == "-args" || a == "--args" {
			break
		}
		flag := strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		if v, ok := strings.CutPrefix(flag, "test.testlogfile="); ok {
			return v, true
		}
	}
	return "", false
}

// truncate empties the file at path, not following a symlink there.
func truncate(path string) error {
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("empty the test log %s: %w", path, os.NewSyscallError("open", err))
	}
	defer unix.Close(fd)
	if err := unix.Ftruncate(fd, 0); err != nil {
		return fmt.Errorf("empty the test log %s: %w", path, os.NewSyscallError("ftruncate", err))
	}
	return nil
}
