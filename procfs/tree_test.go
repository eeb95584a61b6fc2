package procfs

import (
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"
)

// A shell's child is among the shell's descendants, and ours; Exe names
// the program.
func TestDescendantsAndExe(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 60 & wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var sleeper int
	for sleeper == 0 {
		if d := Descendants(cmd.Process.Pid); len(d) > 0 {
			sleeper = d[0]
		}
		time.Sleep(time.Millisecond)
	}
	t.Cleanup(func() {
		syscall.Kill(sleeper, syscall.SIGKILL)
		cmd.Wait()
	})
	if got := Descendants(os.Getpid()); !slices.Contains(got, cmd.Process.Pid) || !slices.Contains(got, sleeper) {
		t.Errorf("our descendants %v lack the shell %d or its child %d", got, cmd.Process.Pid, sleeper)
	}
	if d := Descendants(sleeper); len(d) != 0 {
		t.Errorf("the shell's child has descendants %v", d)
	}
	self, _ := os.Executable()
	if exe, err := Exe(os.Getpid()); err != nil || exe != self {
		t.Errorf("Exe(self) = %q, %v; want %q", exe, err, self)
	}
	if _, err := Exe(-1); err == nil {
		t.Error("Exe(-1): no error")
	}
}
