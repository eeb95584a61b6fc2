package main

import (
	"os"
	"strconv"
	"testing"
)

// TestOpsRun runs every op a few times, bare, in this (unconfined) test
// process: the benchmark must not die on its first confined run because
// of a workload bug.
func TestOpsRun(t *testing.T) {
	for _, name := range opNames() {
		t.Run(name, func(t *testing.T) {
			op, cleanup, err := ops[name]()
			if err != nil {
				t.Fatalf("set up: %v", err)
			}
			defer cleanup()
			for i := 0; i < 50; i++ {
				if err := op(); err != nil {
					t.Fatalf("run %d: %v", i, err)
				}
			}
		})
	}
}

func TestRunRejectsBadArgs(t *testing.T) {
	for _, args := range [][]string{nil, {"getppid"}, {"nosuchop", "1"}, {"getppid", "0"}, {"getppid", "x"}} {
		if err := run(args); err == nil {
			t.Errorf("run(%q) = nil, want an error", args)
		}
	}
}

func TestHWM(t *testing.T) {
	if kib := hwm("/proc/self/status"); kib <= 0 {
		t.Errorf("hwm(/proc/self/status) = %d, want > 0", kib)
	}
	if kib := hwm("/proc/" + strconv.Itoa(os.Getppid()) + "/status"); kib <= 0 {
		t.Errorf("hwm(parent) = %d, want > 0", kib)
	}
	if kib := hwm("/nonexistent/status"); kib != 0 {
		t.Errorf("hwm(missing) = %d, want 0", kib)
	}
}
