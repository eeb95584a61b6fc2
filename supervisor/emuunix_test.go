package supervisor_test

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Allowed unix calls are made by the supervisor when emulation is on (a
// racing thread could otherwise swap an inet socket onto the descriptor),
// with the same results as the kernel's: a relative path resolves in the
// caller's working directory, an abstract name in its namespace,
// SCM_RIGHTS passes the caller's descriptor.
func TestEmulatedUnixCalls(t *testing.T) {
	for _, mode := range []string{"on", "off"} {
		dir := t.TempDir() // a fresh one: the victim binds its sockets there
		out, rep := confinedMode(t, mode, "unix-calls", dir)
		expect(t, out, "ok", "ok", "ok", "ok", "ENOENT", "EBADF")
		if want := map[string]uint64{"on": 6, "off": 0}[mode]; rep.Emulated != want {
			t.Errorf("emulate=%s: %d calls emulated, want %d", mode, rep.Emulated, want)
		}
	}
}

// A unix path through /proc/self or /proc/thread-self names the
// caller's own descriptors, also when nettrap makes the call (issue 37:
// an inner nettrap names its own so, and the outer nettrap that makes
// those calls again resolved them as its own descriptors: ECONNREFUSED,
// ENOENT, EACCES). The victim's descriptors are numbers nettrap has not
// open: resolved as nettrap's, every call fails with ENOENT.
func TestEmulatedUnixProcSelf(t *testing.T) {
	want := []string{"ok", "ok", "ok", "ok", "ok", "ok", "ENOENT", "ENOTDIR"}
	for _, mode := range []string{"on", "off"} {
		dir := t.TempDir()
		out, rep := confinedMode(t, mode, "unix-proc-self", dir)
		expect(t, out, want...)
		if mode == "on" && rep.Emulated < 6 {
			t.Errorf("emulate=on: %d calls emulated, want at least 6", rep.Emulated)
		}
	}
}

// SCM_CREDENTIALS are checked by the kernel against the sender: nettrap
// cannot send them for the caller, and by default lets the call continue.
func TestUnixCredentialsContinue(t *testing.T) {
	skipUnderSealed(t, "it denies the victim's SCM_CREDENTIALS send, which it cannot make race-free (the kernel would check the credentials against nettrap)")
	out, rep := confinedMode(t, "auto", "unix-scm-credentials")
	expect(t, out, "ok")
	if rep.Emulated != 0 {
		t.Errorf("%d calls emulated, want 0", rep.Emulated)
	}
}

// unixVictim runs the unix operations.
func unixVictim(op []string) (string, bool) {
	switch op[0] {
	case "unix-calls": // unix-calls DIR
		return unixCalls(op[1]), true
	case "unix-proc-self": // unix-proc-self DIR
		return unixProcSelf(op[1]), true
	case "unix-scm-credentials":
		return result(unixSCMCredentials()), true
	case "netlink-ownns": // netlink-ownns PORT
		port, _ := strconv.ParseUint(op[1], 10, 32)
		return netlinkOwnNamespace(uint32(port)), true
	}
	return "", false
}

// unixSock is a new unix socket of type typ, in a victim (a failure
// panics: the victim's output then shows it).
func unixSock(typ int) int {
	fd, err := unix.Socket(unix.AF_UNIX, typ|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		panic(err)
	}
	return fd
}

// unixCalls prints one word per call: a stream connect to a relative
// path, to an abstract name, a datagram sendto to a relative path, a
// sendmsg with SCM_RIGHTS (whose descriptor the receiver then writes
// through: "rights:…" when that fails), a connect to a missing path, a
// sendmsg naming a bad descriptor.
func unixCalls(dir string) string {
	if err := os.Chdir(dir); err != nil {
		return "chdir-failed"
	}
	var res []string
	add := func(err error) { res = append(res, result(err)) }
	sock := unixSock
	l := sock(unix.SOCK_STREAM)
	unix.Bind(l, &unix.SockaddrUnix{Name: "s.sock"})
	unix.Listen(l, 8)
	add(unix.Connect(sock(unix.SOCK_STREAM), &unix.SockaddrUnix{Name: "s.sock"}))
	abstract := "@nettrap-victim-" + strconv.Itoa(os.Getpid())
	la := sock(unix.SOCK_STREAM)
	unix.Bind(la, &unix.SockaddrUnix{Name: abstract})
	unix.Listen(la, 8)
	add(unix.Connect(sock(unix.SOCK_STREAM), &unix.SockaddrUnix{Name: abstract}))
	d := sock(unix.SOCK_DGRAM | unix.SOCK_NONBLOCK)
	unix.Bind(d, &unix.SockaddrUnix{Name: "d.sock"})
	s := sock(unix.SOCK_DGRAM)
	add(unix.Sendto(s, []byte("hi"), 0, &unix.SockaddrUnix{Name: "d.sock"}))
	var p [2]int
	unix.Pipe2(p[:], unix.O_NONBLOCK)
	add(unix.Sendmsg(s, []byte("fd"), unix.UnixRights(p[1]), &unix.SockaddrUnix{Name: "d.sock"}, 0))
	buf, oob := make([]byte, 8), make([]byte, 64)
	unix.Recvfrom(d, buf, 0)
	_, oobn, _, _, err := unix.Recvmsg(d, buf, oob, 0)
	if err == nil {
		err = passedWrites(oob[:oobn], p[0])
	}
	if err != nil {
		res[3] = "rights:" + result(err)
	}
	add(unix.Connect(sock(unix.SOCK_STREAM), &unix.SockaddrUnix{Name: "missing.sock"}))
	add(unix.Sendmsg(s, []byte("fd"), unix.UnixRights(999), &unix.SockaddrUnix{Name: "d.sock"}, 0))
	return strings.Join(res, " ")
}

// unixProcSelf prints one word per call naming the caller's own
// descriptors through /proc (numbers from 900 up, which nettrap has not
// open): a stream connect to a socket file held with O_PATH, the same
// through /proc/thread-self, a stream connect to a name in a directory
// held open, datagram sendtos to a socket file held with O_PATH (a name
// with a doubled slash) and to a name in the directory, a stream connect
// with its own relative root, then a connect to a descriptor not open
// and one through a descriptor that is no directory.
func unixProcSelf(dir string) string {
	var res []string
	add := func(err error) { res = append(res, result(err)) }
	sock := unixSock
	hold := func(path string, flags, at int) string {
		fd, err := unix.Open(path, flags|unix.O_CLOEXEC, 0)
		if err != nil {
			panic(err)
		}
		if err := unix.Dup3(fd, at, unix.O_CLOEXEC); err != nil {
			panic(err)
		}
		unix.Close(fd)
		return strconv.Itoa(at)
	}
	l := sock(unix.SOCK_STREAM)
	unix.Bind(l, &unix.SockaddrUnix{Name: dir + "/s.sock"})
	unix.Listen(l, 8)
	d := sock(unix.SOCK_DGRAM | unix.SOCK_NONBLOCK)
	unix.Bind(d, &unix.SockaddrUnix{Name: dir + "/d.sock"})
	sfd := hold(dir+"/s.sock", unix.O_PATH, 900)
	dirfd := hold(dir, unix.O_PATH|unix.O_DIRECTORY, 901)
	dfd := hold(dir+"/d.sock", unix.O_PATH, 902)
	add(unix.Connect(sock(unix.SOCK_STREAM), &unix.SockaddrUnix{Name: "/proc/self/fd/" + sfd}))
	runtime.LockOSThread()
	add(unix.Connect(sock(unix.SOCK_STREAM), &unix.SockaddrUnix{Name: "/proc/thread-self/fd/" + sfd}))
	runtime.UnlockOSThread()
	add(unix.Connect(sock(unix.SOCK_STREAM), &unix.SockaddrUnix{Name: "/proc/self/fd/" + dirfd + "/s.sock"}))
	s := sock(unix.SOCK_DGRAM)
	add(unix.Sendto(s, []byte("hi"), 0, &unix.SockaddrUnix{Name: "/proc/self//fd/" + dfd}))
	add(unix.Sendto(s, []byte("hi"), 0, &unix.SockaddrUnix{Name: "/proc/self/fd/" + dirfd + "/./d.sock"}))
	add(unix.Connect(sock(unix.SOCK_STREAM), &unix.SockaddrUnix{Name: "/proc/self/fd/" + dirfd + "/../" + filepath.Base(dir) + "/s.sock"}))
	add(unix.Connect(sock(unix.SOCK_STREAM), &unix.SockaddrUnix{Name: "/proc/self/fd/903"}))
	add(unix.Connect(sock(unix.SOCK_STREAM), &unix.SockaddrUnix{Name: "/proc/self/fd/" + sfd + "/s.sock"}))
	return strings.Join(res, " ")
}

// passedWrites writes through the descriptor received in oob, and reads
// it from the pipe's other end r.
func passedWrites(oob []byte, r int) error {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil || len(msgs) != 1 {
		return unix.EBADMSG
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		return unix.EBADMSG
	}
	if _, err := unix.Write(fds[0], []byte("x")); err != nil {
		return err
	}
	b := make([]byte, 1)
	_, err = unix.Read(r, b)
	return err
}

// unixSCMCredentials sends the caller's own credentials over a socket
// pair (sendmsg, trapped).
func unixSCMCredentials() error {
	runtime.LockOSThread()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_DGRAM, 0)
	if err != nil {
		return err
	}
	cred := unix.UnixCredentials(&unix.Ucred{Pid: int32(os.Getpid()), Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid())})
	return unix.Sendmsg(fds[0], []byte("c"), cred, nil, 0)
}

// A netlink send to the kernel in a namespace the target made is made by
// the supervisor without the address (the kernel then checks the
// socket's opener as well as the sender); one to another port is not
// emulated. The results are the kernel's either way.
func TestEmulatedNetlinkOwnNamespace(t *testing.T) {
	skipUnderSealed(t, "it denies a netlink send to a destination other than the kernel, which it cannot make race-free")
	if os.Geteuid() != 0 {
		t.Skip("not root: cannot make a network namespace")
	}
	for _, mode := range []string{"on", "off"} {
		out, rep := confinedMode(t, mode, "netlink-ownns", "0")
		expect(t, out, "ok", "RTM_NEWLINK")
		if want := map[string]uint64{"on": 1, "off": 0}[mode]; rep.Emulated != want {
			t.Errorf("emulate=%s, to the kernel: %d calls emulated, want %d", mode, rep.Emulated, want)
		}
	}
	out, rep := confinedMode(t, "auto", "netlink-ownns", "4242")
	expect(t, out, "ECONNREFUSED", "EAGAIN")
	if rep.Emulated != 0 {
		t.Errorf("to port 4242: %d calls emulated, want 0", rep.Emulated)
	}
}

// netlinkOwnNamespace makes a network namespace of its own, and sends a
// link dump there to port (0: the kernel) with sendto; it prints the
// send's result and what came back.
func netlinkOwnNamespace(port uint32) string {
	runtime.LockOSThread() // the namespace is the thread's
	if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
		return "unshare:" + result(err)
	}
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return "socket:" + result(err)
	}
	req := make([]byte, unix.NLMSG_HDRLEN+unix.SizeofIfInfomsg)
	hdr := (*unix.NlMsghdr)(unsafe.Pointer(&req[0]))
	*hdr = unix.NlMsghdr{Len: uint32(len(req)), Type: unix.RTM_GETLINK, Flags: unix.NLM_F_REQUEST | unix.NLM_F_DUMP, Seq: 1}
	sendErr := unix.Sendto(fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Pid: port})
	buf := make([]byte, 1<<16)
	n, _, err := unix.Recvfrom(fd, buf, unix.MSG_DONTWAIT)
	got := result(err)
	if err == nil && n >= unix.NLMSG_HDRLEN && (*unix.NlMsghdr)(unsafe.Pointer(&buf[0])).Type == unix.RTM_NEWLINK {
		got = "RTM_NEWLINK"
	}
	return result(sendErr) + " " + got
}
