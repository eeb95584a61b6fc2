package hub

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/nettrap/nettrap/tmpdir"
)

// The hub's directory names its owner, so that the next nettrap removes
// it if this one is killed, and Close removes it with the owner file.
func TestHubDirNamesItsOwner(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	s, err := Listen()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(s.Path)
	b, err := os.ReadFile(filepath.Join(dir, tmpdir.OwnerFile))
	if err != nil || !strings.HasPrefix(string(b), strconv.Itoa(os.Getpid())+" ") {
		t.Errorf("owner file %q (%v), want this process", b, err)
	}
	s.Close()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the hub's directory after Close: %v", err)
	}
}
