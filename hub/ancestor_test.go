package hub

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// ancestorProbeEnv makes the test binary, re-executed as a child of the
// test, check the hub socket it names and exit 0 when the check passes.
const ancestorProbeEnv = "NETTRAP_HUB_TEST_ANCESTOR_PROBE"

// ancestorProbe is that check, run from TestMain.
func ancestorProbe(path string) int {
	if err := ServedByAncestor(path); err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		return 1
	}
	return 0
}

// ServedByAncestor accepts a hub served by an ancestor and refuses one
// served by anything else, or by nothing.
func TestServedByAncestor(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hub.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), ancestorProbeEnv+"="+path)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("a child of the hub's server was refused: %v: %s", err, out)
	}
	// This process serves the hub: it is not its own ancestor.
	if err := ServedByAncestor(path); err == nil || !strings.Contains(err.Error(), "did not start this process") {
		t.Errorf("the server itself: %v, want a refusal", err)
	}
	if err := ServedByAncestor(filepath.Join(t.TempDir(), "none.sock")); err == nil {
		t.Error("a hub nobody serves was accepted")
	}
}
