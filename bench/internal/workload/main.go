// Command workload runs one operation N times in a loop and prints the
// time per operation as JSON. The benchmarks in package bench run it bare,
// under a floor supervisor and under nettrap: timing inside the process
// keeps process start-up and supervisor set-up out of the figure.
//
//	workload OP N
//
// Every address is on loopback (127.0.0.1); the peers live in this process.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/nettrap/nettrap/bench/internal/wire"
	"github.com/nettrap/nettrap/procfs"
)

// result is what the workload prints (one JSON line).
type result = wire.Result

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "workload:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) > 0 && args[0] == "count" {
		return count(args[1:])
	}
	if len(args) != 2 {
		return fmt.Errorf("usage: workload OP N (ops: %v)", opNames())
	}
	n, err := strconv.Atoi(args[1])
	if err != nil || n < 1 {
		return fmt.Errorf("bad N %q", args[1])
	}
	mk, ok := ops[args[0]]
	if !ok {
		return fmt.Errorf("unknown op %q (ops: %v)", args[0], opNames())
	}
	measures = nil
	op, cleanup, err := mk()
	if err != nil {
		return fmt.Errorf("set up %s: %w", args[0], err)
	}
	defer cleanup()
	// Warm-up: page in the code paths, fill the UDP receive buffer, let
	// the supervisor's goroutines and the kernel's caches settle.
	for i := 0; i < min(n, warmup); i++ {
		if err := op(); err != nil {
			return fmt.Errorf("%s (warm-up): %w", args[0], err)
		}
	}
	if measures != nil {
		measures.reset()
	}
	self0, parent0 := cpuTimes()
	start := time.Now()
	for i := 0; i < n; i++ {
		if err := op(); err != nil {
			return fmt.Errorf("%s: %w", args[0], err)
		}
	}
	elapsed := time.Since(start)
	self1, parent1 := cpuTimes()
	res := result{
		Op: args[0], N: n, NsPerOp: float64(elapsed.Nanoseconds()) / float64(n),
		SelfHWM:   hwm(procfs.SelfPath("status")),
		ParentHWM: hwm(procfs.TaskPath(os.Getppid(), "status")),
		SelfCPU:   float64(self1-self0) / float64(n),
	}
	if parent0 >= 0 && parent1 >= 0 {
		res.ParentCPU = float64(parent1-parent0) / float64(n)
	}
	if measures != nil {
		measures.fill(&res)
	}
	return json.NewEncoder(os.Stdout).Encode(res)
}

const warmup = 2000
