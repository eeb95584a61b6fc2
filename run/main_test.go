package run

import (
	"net"
	"os"
	"testing"
	"time"
)

// dialEnv makes this test binary, started as a run's command, try one
// connection to the address it names and exit 0 whatever came of it (a
// command that swallows the error).
const dialEnv = "NETTRAP_RUN_TEST_DIAL"

// TestMain lets this binary play the parts a run starts: the reaper
// (startReaper runs this executable) and a command.
func TestMain(m *testing.M) {
	if os.Args[0] == ReaperArgv0 {
		os.Exit(Reaper())
	}
	if addr := os.Getenv(dialEnv); addr != "" {
		if c, err := net.DialTimeout("tcp", addr, 2*time.Second); err == nil {
			c.Close()
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}
