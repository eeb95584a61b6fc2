package sealns

import (
	"errors"
	"net"
	"os"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/procfs"
)

// newOrSkip makes a namespace, or skips where nettrap could not (no
// CAP_SYS_ADMIN): fatal under CI=true, which runs as root.
func newOrSkip(t *testing.T) *Netns {
	t.Helper()
	if os.Getenv("NETTRAP_HUB") != "" && os.Getenv("NETTRAP_SEALED") == "1" && procfs.SeccompFiltered() {
		// Asking would fail the test: the denial counts even if it skipped.
		t.Skip("under nettrap --sealed, which denies the SIOCSIFFLAGS that brings lo up (an ioctl it cannot make race-free)")
	}
	n, err := New()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%v (CI=true, so this is fatal)", err)
		}
		t.Skipf("cannot make a network namespace here: %v", err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

// TestOwnLoopbackOnly: in the namespace lo is up (a listener there takes
// a connection made there), the namespace is not the test's, and a
// listener on the host's 127.0.0.1 cannot be reached from it.
func TestOwnLoopbackOnly(t *testing.T) {
	n := newOrSkip(t)
	host, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	// Asked on a thread of its own: New's thread may have been the
	// thread-group leader, which /proc/self then shows in the namespace.
	var own procfs.NsID
	onThread(func() { own, err = procfs.Namespace(procfs.ThreadSelfPath("ns/net")) })
	if err != nil {
		t.Fatal(err)
	}
	err = n.Do(func() error {
		in, err := procfs.Namespace(procfs.ThreadSelfPath("ns/net"))
		if err != nil {
			return err
		}
		if in == own {
			t.Errorf("Do ran in the test's own namespace %v", own)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		defer ln.Close()
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Errorf("dial the namespace's own listener: %v", err)
		} else {
			c.Close()
		}
		c, err = net.Dial("tcp", host.Addr().String())
		if err == nil {
			c.Close()
			t.Errorf("the host's listener %s was reached from the namespace", host.Addr())
		} else if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("dial the host's listener from the namespace: %v, want ECONNREFUSED", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestOnlyLoopback: the namespace has one interface, lo.
func TestOnlyLoopback(t *testing.T) {
	n := newOrSkip(t)
	var names []string
	err := n.Do(func() error {
		ifs, err := net.Interfaces()
		for _, i := range ifs {
			names = append(names, i.Name)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 1 || names[0] != "lo" {
		t.Errorf("interfaces %v, want [lo]", names)
	}
}

// TestSocketsStayInside: a socket made in Do stays in the namespace
// after its thread is gone (its SO_NETNS_COOKIE is not the host's).
func TestSocketsStayInside(t *testing.T) {
	n := newOrSkip(t)
	var fd int
	if err := n.Do(func() (err error) {
		fd, err = unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	host, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(host)
	a, errA := unix.GetsockoptUint64(fd, unix.SOL_SOCKET, unix.SO_NETNS_COOKIE)
	b, errB := unix.GetsockoptUint64(host, unix.SOL_SOCKET, unix.SO_NETNS_COOKIE)
	if errA != nil || errB != nil {
		t.Skipf("no SO_NETNS_COOKIE here (5.14+): %v %v", errA, errB)
	}
	if a == b {
		t.Errorf("the namespace's socket has the host's cookie %d", a)
	}
}

// TestRunInside: Run's functions run in the namespace, one thread for
// all of them, and Close ends it.
func TestRunInside(t *testing.T) {
	n := newOrSkip(t)
	var first procfs.NsID
	var tids []int
	for i := 0; i < 3; i++ {
		err := n.Run(func() error {
			id, err := procfs.Namespace(procfs.ThreadSelfPath("ns/net"))
			if i == 0 {
				first = id
			} else if id != first {
				t.Errorf("run %d in namespace %v, the first in %v", i, id, first)
			}
			tids = append(tids, unix.Gettid())
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	var do procfs.NsID
	if err := n.Do(func() (err error) { do, err = procfs.Namespace(procfs.ThreadSelfPath("ns/net")); return err }); err != nil {
		t.Fatal(err)
	}
	if do != first {
		t.Errorf("Run in %v, Do in %v: want one namespace", first, do)
	}
	if tids[0] != tids[1] || tids[1] != tids[2] {
		t.Errorf("Run used threads %v, want one", tids)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
}
