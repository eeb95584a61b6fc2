package main

import (
	"fmt"
	"os"
	"runtime/pprof"

	"github.com/nettrap/nettrap/supervisor"
)

// startProfile starts writing nettrap's CPU profile to the file
// supervisor.CPUProfileEnv names, if it names one (a test-only switch for
// work on nettrap's speed), and returns what ends it. A profile that
// cannot be written is said, and the run goes on.
func startProfile(getenv func(string) string) (stop func()) {
	path := getenv(supervisor.CPUProfileEnv)
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "nettrap: %s: %v\n", supervisor.CPUProfileEnv, err)
		if f != nil {
			f.Close()
		}
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "nettrap: %s: %v\n", supervisor.CPUProfileEnv, err)
		}
	}
}
