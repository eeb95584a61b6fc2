package procfs

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
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

func TestProcessOf(t *testing.T) {
	self, err := ProcessOf(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	exe, _ := os.Executable()
	if self.PID != os.Getpid() || self.Exe != exe || len(self.Argv) == 0 || self.Argv[0] != os.Args[0] {
		t.Errorf("ProcessOf(self) = %+v, want pid %d exe %s argv %q", self, os.Getpid(), exe, os.Args)
	}
	// A thread of this process belongs to it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if tgid, err := ThreadGroup(unix.Gettid()); err != nil || tgid != os.Getpid() {
		t.Errorf("ThreadGroup(this thread) = %d, %v; want %d", tgid, err, os.Getpid())
	}
	if _, err := ProcessOf(-1); err == nil {
		t.Error("ProcessOf(-1) succeeded")
	}
}

func TestPathExists(t *testing.T) {
	dir := t.TempDir()
	if !PathExists(os.Getpid(), dir) {
		t.Errorf("%s does not exist for this process", dir)
	}
	if PathExists(os.Getpid(), dir+"/missing") {
		t.Errorf("%s/missing exists for this process", dir)
	}
	if PathExists(os.Getpid(), "no-such-file-in-the-working-directory") {
		t.Error("a relative missing path exists")
	}
	if !PathExists(-1, "/missing") {
		t.Error("a gone task's path is not given the benefit of the doubt")
	}
}

func TestOpenFDs(t *testing.T) {
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fds, err := OpenFDs()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.IsSorted(fds) || !slices.Contains(fds, int(f.Fd())) || !slices.Contains(fds, 0) {
		t.Errorf("OpenFDs = %v: want sorted, with 0 and %d", fds, f.Fd())
	}
}

// Sockets are told apart by the tables of /proc/self/net; a netlink
// socket's protocol is read from its line.
func TestSocketKindAndNetlinkProtocol(t *testing.T) {
	me := os.Getpid()
	for _, s := range []struct {
		domain, typ, proto int
		want               string
	}{
		{unix.AF_INET, unix.SOCK_STREAM, 0, "tcp"},
		{unix.AF_INET6, unix.SOCK_DGRAM, 0, "udp"},
		{unix.AF_UNIX, unix.SOCK_STREAM, 0, "unix"},
		{unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE, ""},
	} {
		fd, err := unix.Socket(s.domain, s.typ|unix.SOCK_CLOEXEC, s.proto)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fd)
		// The tables list bound sockets (TCP: listening ones).
		var sa unix.Sockaddr = &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}
		switch s.domain {
		case unix.AF_INET6:
			sa = &unix.SockaddrInet6{Addr: [16]byte{15: 1}}
		case unix.AF_UNIX:
			sa = &unix.SockaddrUnix{Name: t.TempDir() + "/s"}
		case unix.AF_NETLINK:
			sa = &unix.SockaddrNetlink{Family: unix.AF_NETLINK}
		}
		if err := unix.Bind(fd, sa); err != nil {
			t.Fatal(err)
		}
		if s.typ == unix.SOCK_STREAM {
			if err := unix.Listen(fd, 1); err != nil {
				t.Fatal(err)
			}
		}
		if got := SocketKind(me, fd); got != s.want {
			t.Errorf("SocketKind(%d/%d) = %q, want %q", s.domain, s.typ, got, s.want)
		}
		proto, ok := NetlinkProtocol(me, fd)
		if isNetlink := s.domain == unix.AF_NETLINK; ok != isNetlink || (ok && proto != s.proto) {
			t.Errorf("NetlinkProtocol(%d/%d) = %d, %v", s.domain, s.typ, proto, ok)
		}
	}
	if SocketKind(me, 0) != "" {
		t.Error("stdin is taken for a socket")
	}
}

func TestNamespace(t *testing.T) {
	self, err := Namespace(TaskPath(os.Getpid(), "ns/net"))
	if err != nil {
		t.Fatal(err)
	}
	if thread, err := Namespace(ThreadSelfPath("ns/net")); err != nil || thread != self {
		t.Errorf("this thread's namespace %+v, %v; the process's %+v", thread, err, self)
	}
	if _, err := Namespace(TaskPath(-1, "ns/net")); err == nil {
		t.Error("a missing task has a namespace")
	}
}

func TestHasCapability(t *testing.T) {
	path := filepath.Join(t.TempDir(), "status")
	os.WriteFile(path, []byte("Name:\tx\nCapPrm:\t0000000000001000\nCapEff:\t0000000000000000\nCapBnd:\tzz\n"), 0o644)
	for _, tc := range []struct {
		field string
		c     int
		want  bool
		err   bool
	}{
		{"CapPrm", 12, true, false},
		{"CapPrm", 19, false, false},
		{"CapEff", 12, false, false},
		{"CapBnd", 12, false, true},
		{"CapAmb", 12, false, true},
	} {
		got, err := HasCapability(path, tc.field, tc.c)
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("HasCapability(%s, %d) = %v, %v; want %v, error %v", tc.field, tc.c, got, err, tc.want, tc.err)
		}
	}
}

// A socket's protocol name is read through /proc even before it is bound;
// a descriptor that is no socket has none.
func TestSocketProtoName(t *testing.T) {
	fd, err := unix.Socket(unix.AF_INET6, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Skipf("no inet6 socket: %v", err)
	}
	defer unix.Close(fd)
	if name, ok := SocketProtoName(os.Getpid(), fd); !ok || name != "UDPv6" {
		t.Errorf("SocketProtoName(unbound udp6) = %q, %v; want UDPv6", name, ok)
	}
	f, err := os.Open(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if name, ok := SocketProtoName(os.Getpid(), int(f.Fd())); ok {
		t.Errorf("SocketProtoName(a file) = %q, want none", name)
	}
}

func TestOwnPIDNamespace(t *testing.T) {
	ns, err := OwnPIDNamespace()
	if err != nil || !SamePIDNamespace(os.Getpid()) || len(ns) < len("pid:[1]") || ns[:5] != "pid:[" {
		t.Errorf("OwnPIDNamespace() = %q, %v", ns, err)
	}
}
