package supervisor_test

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/supervisor"
)

func TestIdentityMappings(t *testing.T) {
	cases := []struct {
		text string
		want []syscall.SysProcIDMap
		err  bool
	}{
		// The initial user namespace.
		{"         0          0 4294967295\n", []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 4294967295}}, false},
		// A container's: ids as nettrap sees them are the first column.
		{"0 100000 65536\n", []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 65536}}, false},
		{"0 1000 1\n1 100000 65536\n", []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1}, {ContainerID: 1, HostID: 1, Size: 65536}}, false},
		{"", nil, true},
		{"0 0\n", nil, true},
		{"0 0 0\n", nil, true},
		{"x 0 1\n", nil, true},
		{"1 0 4294967295\n", nil, true}, // past 2^32
	}
	for _, c := range cases {
		got, err := supervisor.IdentityMappings(c.text)
		if (err != nil) != c.err || !reflect.DeepEqual(got, c.want) {
			t.Errorf("IdentityMappings(%q) = %v, %v; want %v, error %v", c.text, got, err, c.want, c.err)
		}
	}
}

func TestParseUsernsMode(t *testing.T) {
	for s, want := range map[string]supervisor.UsernsMode{"auto": supervisor.UsernsAuto, "": supervisor.UsernsAuto, "off": supervisor.UsernsOff, "OFF": supervisor.UsernsOff} {
		if got, err := supervisor.ParseUsernsMode(s); err != nil || got != want {
			t.Errorf("ParseUsernsMode(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	if _, err := supervisor.ParseUsernsMode("on"); err == nil {
		t.Error(`ParseUsernsMode("on"): no error`)
	}
}

// TestUsernsOfTheCommand: as root the victim runs in a user namespace of
// its own, identity-mapped, and holds no capability over the starting
// network namespace: from a namespace it made, it cannot setns() back;
// nettrap's reads of its memory and socket borrowing (emulated connects)
// still work. With --userns=off it shares nettrap's, and goes back. Not
// root: nothing changes.
func TestUsernsOfTheCommand(t *testing.T) {
	ok := listen(t, "127.0.0.1")
	self, _ := os.Readlink("/proc/self/ns/user")
	for _, mode := range []string{"auto", "off"} {
		out, rep := confinedWith(t, []string{usernsEnv + "=" + mode}, "userns", ok.addr)
		if len(out) != 4 {
			t.Fatalf("--userns=%s: victim printed %q", mode, out)
		}
		own := out[0] != self
		want := supervisor.NsUnprivileged
		switch {
		case os.Geteuid() == 0 && mode == "auto":
			want = supervisor.NsUserns
		case os.Geteuid() == 0:
			want = supervisor.NsOff
		}
		if rep.Userns != want {
			t.Errorf("--userns=%s: method %v, want %v", mode, rep.Userns, want)
		}
		if own != (want == supervisor.NsUserns) {
			t.Errorf("--userns=%s: victim's user namespace %s, nettrap's %s", mode, out[0], self)
		}
		if want == supervisor.NsUserns && (out[1] != "uidmap=0:0:4294967295" || out[2] != "setns=EPERM") {
			t.Errorf("--userns=%s: %q, want the identity map and setns refused", mode, out)
		}
		if out[3] != "connect=ok" || rep.Allowed < 1 {
			t.Errorf("--userns=%s: the connect: %q, report %+v", mode, out[3], rep)
		}
		if want == supervisor.NsOff && !ownsNetns() {
			// Under a nettrap that runs this binary in a user namespace
			// of its own (--userns=auto as root), which does not own the
			// starting network namespace.
			t.Skip("this test binary's user namespace holds no capability over its network namespace: the --userns=off control cannot setns back, so the EPERM of auto proves nothing here")
		}
		if want == supervisor.NsOff && out[2] != "setns=ok" {
			t.Errorf("--userns=off as root: %q, want setns=ok (else the EPERM above proves nothing)", out)
		}
	}
}

// ownsNetns tells whether this process's user namespace owns its network
// namespace: only then can a root victim that shares it setns() back.
// NS_GET_USERNS says EPERM for an owner outside ours.
func ownsNetns() bool {
	fd, err := unix.Open("/proc/self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	owner, err := unix.IoctlRetInt(fd, unix.NS_GET_USERNS)
	if err != nil {
		return false
	}
	defer unix.Close(owner)
	var o, self unix.Stat_t
	if unix.Fstat(owner, &o) != nil || unix.Stat("/proc/self/ns/user", &self) != nil {
		return false
	}
	return o.Dev == self.Dev && o.Ino == self.Ino
}

// usernsVictim is the victim op: its user namespace, its uid map
// ("uidmap=IN:OUT:COUNT" of the first line), whether a thread that made
// a network namespace can setns() back to the starting one, and a
// connect to addr.
func usernsVictim(addr string) string {
	ns, _ := os.Readlink("/proc/self/ns/user")
	b, _ := os.ReadFile("/proc/self/uid_map")
	line, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	uidmap := "uidmap=" + strings.Join(strings.Fields(line), ":")
	return fmt.Sprintf("%s %s setns=%s connect=%s", ns, uidmap, setnsBack(), result(connectTo(addr)))
}

// setnsBack unshares a network namespace on a locked thread (which then
// dies) and enters the starting one again.
func setnsBack() string {
	ch := make(chan string, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread may end elsewhere
		fd, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			ch <- "open:" + errnoName(err)
			return
		}
		defer unix.Close(fd)
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			ch <- "unshare:" + errnoName(err)
			return
		}
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			ch <- errnoName(err)
			return
		}
		ch <- "ok"
	}()
	return <-ch
}

func errnoName(err error) string {
	var en syscall.Errno
	if errors.As(err, &en) {
		return unix.ErrnoName(en)
	}
	return err.Error()
}
