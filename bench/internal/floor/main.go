// Command floor runs a command under supervisor.Start with a decider that
// allows everything: the supervisor still receives each notification,
// reads the sockaddr from the target's memory, checks the notification is
// still valid and answers CONTINUE. It is the mechanism's floor, against
// which the benchmarks weigh what nettrap's own decisions add.
//
//	floor COMMAND [ARGS...]
package main

import (
	"fmt"
	"os"
	"os/exec"

	"github.com/nettrap/nettrap/decision"
	"github.com/nettrap/nettrap/internal/personality"
	"github.com/nettrap/nettrap/supervisor"
)

func main() {
	// The ptrace engine, where auto falls back to it, re-execs this
	// binary as its stub and waker (internal/personality).
	personality.Init()
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: floor COMMAND [ARGS...]")
		os.Exit(125)
	}
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	allow := decision.QuickFunc(func(*decision.Call) decision.Answer {
		return decision.Allow()
	})
	sess, err := supervisor.Start(cmd, supervisor.Options{Decider: allow})
	if err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(125)
	}
	waitErr := sess.Wait()
	for _, e := range sess.Errors() {
		fmt.Fprintln(os.Stderr, "floor: supervisor:", e)
	}
	if cmd.ProcessState == nil {
		fmt.Fprintln(os.Stderr, "floor: wait:", waitErr)
		os.Exit(125)
	}
	os.Exit(cmd.ProcessState.ExitCode())
}
