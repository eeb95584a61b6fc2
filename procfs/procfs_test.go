package procfs

import (
	"os"
	"os/exec"
	"testing"

	"golang.org/x/sys/unix"
)

func TestParentAndDescendant(t *testing.T) {
	if got := ParentPID(os.Getpid()); got != os.Getppid() {
		t.Errorf("ParentPID(self) = %d, want %d", got, os.Getppid())
	}
	if ParentPID(-1) != 0 {
		t.Error("ParentPID(-1) != 0")
	}
	// sh starts sleep: sleep descends from us and from sh, not the reverse.
	sh := exec.Command("sh", "-c", "sleep 5 & echo $!; wait")
	out, err := sh.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := sh.Start(); err != nil {
		t.Skip("no sh:", err)
	}
	defer func() { sh.Process.Kill(); sh.Wait() }()
	var sleepPID int
	buf := make([]byte, 32)
	n, _ := out.Read(buf)
	for _, c := range buf[:n] {
		if c >= '0' && c <= '9' {
			sleepPID = sleepPID*10 + int(c-'0')
		}
	}
	defer unix.Kill(sleepPID, unix.SIGKILL)
	me := os.Getpid()
	switch {
	case !IsDescendant(sleepPID, me):
		t.Errorf("sleep %d is not seen as a descendant of the test %d", sleepPID, me)
	case !IsDescendant(sleepPID, sh.Process.Pid):
		t.Errorf("sleep is not seen as a descendant of sh")
	case IsDescendant(me, sleepPID):
		t.Errorf("the test is seen as a descendant of sleep")
	case IsDescendant(me, me):
		t.Errorf("a process is its own descendant")
	case IsDescendant(os.Getppid(), me):
		t.Errorf("our parent is seen as our descendant")
	}
}

func TestSamePIDNamespace(t *testing.T) {
	if !SamePIDNamespace(os.Getpid()) {
		t.Error("this process is not in its own pid namespace")
	}
	if SamePIDNamespace(-5) {
		t.Error("a missing task is in our pid namespace")
	}
}

func TestPidfdTarget(t *testing.T) {
	pidfd, err := unix.PidfdOpen(os.Getppid(), 0)
	if err != nil {
		t.Skip("no pidfd_open:", err)
	}
	defer unix.Close(pidfd)
	if got := PidfdTarget(os.Getpid(), pidfd); got != os.Getppid() {
		t.Errorf("PidfdTarget = %d, want %d", got, os.Getppid())
	}
	if got := PidfdTarget(os.Getpid(), 0); got != 0 {
		t.Errorf("stdin taken for a pidfd of %d", got)
	}
}

func TestStartTime(t *testing.T) {
	self, err := StartTime(os.Getpid())
	if err != nil || self == 0 {
		t.Fatalf("StartTime(self) = %d, %v", self, err)
	}
	if again, _ := StartTime(os.Getpid()); again != self {
		t.Errorf("StartTime(self) changed: %d then %d", self, again)
	}
	// A later process, whose name holds ") (" to trip a naive parser.
	link := t.TempDir() + "/a) (b"
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep:", err)
	}
	if err := os.Symlink(sleep, link); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(link, "5")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	child, err := StartTime(cmd.Process.Pid)
	if err != nil || child < self {
		t.Errorf("StartTime(child) = %d, %v; want >= %d", child, err, self)
	}
	if ParentPID(cmd.Process.Pid) != os.Getpid() {
		t.Errorf("ParentPID of %q is not us", link)
	}
	if _, err := StartTime(-1); err == nil {
		t.Error("StartTime(-1) succeeded")
	}
}
