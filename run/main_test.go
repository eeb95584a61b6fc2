package run

import (
	"net"
	"os"
	"testing"
	"time"

	"github.com/nettrap/nettrap/internal/personality"
)

// dialEnv makes this test binary, started as a run's command, try one
// connection to the address it names and exit 0 whatever came of it (a
// command that swallows the error).
const dialEnv = "NETTRAP_RUN_TEST_DIAL"

// TestMain lets this binary play the parts a run starts: the
// personalities (the reaper, which startReaper runs from this executable,
// and the ptrace engine's stub and waker) and a command.
func TestMain(m *testing.M) {
	personality.Init()
	if addr := os.Getenv(dialEnv); addr != "" {
		if c, err := net.DialTimeout("tcp", addr, 2*time.Second); err == nil {
			c.Close()
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}
