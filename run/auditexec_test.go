package run

import (
	"os"
	"path/filepath"
	"testing"
)

// privateDir makes a directory only this user may enter, and refuses one
// someone else could have laid in the way: open to others, or a link.
func TestPrivateDir(t *testing.T) {
	base := t.TempDir()
	fresh := filepath.Join(base, "fresh")
	if _, err := privateDir(fresh); err != nil {
		t.Fatalf("a new directory: %v", err)
	}
	if fi, err := os.Stat(fresh); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("made %v (%v), want mode 0700", fi.Mode(), err)
	}
	if _, err := privateDir(fresh); err != nil {
		t.Errorf("the same directory again: %v", err)
	}
	open := filepath.Join(base, "open")
	if err := os.Mkdir(open, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := privateDir(open); err == nil {
		t.Error("a directory others may write: no error")
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(fresh, link); err != nil {
		t.Fatal(err)
	}
	if _, err := privateDir(link); err == nil {
		t.Error("a symbolic link to a private directory: no error")
	}
	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := privateDir(file); err == nil {
		t.Error("a file: no error")
	}
}
