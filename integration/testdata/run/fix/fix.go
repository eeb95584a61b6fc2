// Package fix helps the fixture tests of nettrap's run-mode integration
// tests. They aim only at fake hosts inside the integration tests' private
// network namespace, and do nothing unless NTRUNFIX=1 says they run there.
package fix

import (
	"net"
	"os"
	"testing"
	"time"
)

// Enabled reports whether the fixtures run inside the integration sandbox.
func Enabled() bool { return os.Getenv("NTRUNFIX") == "1" }

// Require skips t outside the sandbox.
func Require(t *testing.T) {
	t.Helper()
	if !Enabled() {
		t.Skip("fixture of nettrap's integration tests: runs only in their sandbox (NTRUNFIX=1)")
	}
}

// Dial connects to addr and ignores the outcome, as a careless test does:
// nettrap must fail the test even though it swallowed the error.
func Dial(network, addr string) error {
	c, err := net.DialTimeout(network, addr, 5*time.Second)
	if err == nil {
		c.Close()
	}
	return err
}
