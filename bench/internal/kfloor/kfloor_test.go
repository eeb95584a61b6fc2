package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/procfs"
)

// roleEnv makes the test binary kfloor itself; victimArg (its first
// argument) makes it the victim kfloor runs.
const (
	roleEnv   = "KFLOOR_TEST_ROLE"
	victimArg = "-kfloor-test-victim"
)

func TestMain(m *testing.M) {
	switch {
	case len(os.Args) > 3 && os.Args[1] == victimArg && os.Args[2] == heldArg:
		os.Exit(heldVictim(os.Args[3]))
	case len(os.Args) > 1 && os.Args[1] == victimArg:
		os.Exit(victim())
	case os.Getenv(roleEnv) == "kfloor":
		os.Exit(dispatch(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// victimCase is one call of the victim: a UDP send with an address or a
// TCP connect, to a destination on a listener of its own or to a
// documentation address that no route reaches in the test's namespace.
type victimCase struct {
	name, network, addr string
	local               bool // the hooks let it through
}

var victimCases = []victimCase{
	{"udp4-loopback", "udp4", "127.0.0.1", true},
	{"udp4-loopback-other", "udp4", "127.1.2.3", true},
	{"tcp4-loopback", "tcp4", "127.0.0.1", true},
	{"udp6-loopback", "udp6", "::1", true},
	{"udp6-mapped-loopback", "udp6", "::ffff:127.0.0.1", true},
	{"tcp6-loopback", "tcp6", "::1", true},
	{"udp4-external", "udp4", "192.0.2.1", false},
	{"tcp4-external", "tcp4", "198.51.100.1", false},
	{"udp6-external", "udp6", "2001:db8::1", false},
	{"udp6-mapped-external", "udp6", "::ffff:203.0.113.1", false},
	{"tcp6-external", "tcp6", "2001:db8::2", false},
}

// lsrrCase is the hole the address programs leave: a UDP send to
// loopback whose control message carries a loose source route
// (IP_RETOPTS, LSRR) through lsrrHop. The sendmsg4 program sees only the
// address the caller named (127.0.0.1) and passes it; the kernel then
// routes the datagram to the route's first hop, as it would a send to
// lsrrHop itself. The victim puts lsrrHop on its namespace's lo, so the
// send succeeds there, bare and under the address programs; the egress
// backstop (-e), which sees the packet as routed, refuses it (EPERM).
// Under nettrap's notify engine the control message is read and the send
// denied.
const lsrrCase = "udp4-loopback-lsrr-external"

// filtersCase is the victim's count of seccomp filters (Seccomp_filters
// in /proc/self/status): 1 under kfloor -f, 0 otherwise.
const filtersCase = "seccomp-filters"

func seccompFilters() int {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Seccomp_filters:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				return -1
			}
			return n
		}
	}
	return -1
}

// lsrrHop is the source route's first hop (a /32 on the victim's lo).
var lsrrHop = [4]byte{203, 0, 113, 99}

// sendLSRR makes lsrrCase's send.
func sendLSRR() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	// IPOPT_LSRR, length 7, pointer 4, the first hop; then IPOPT_END.
	opt := append(append([]byte{0x83, 7, 4}, lsrrHop[:]...), 0)
	// struct cmsghdr on a 64-bit ABI: a size_t length, level, type.
	oob := make([]byte, unix.CmsgSpace(len(opt)))
	binary.NativeEndian.PutUint64(oob[0:], uint64(unix.CmsgLen(len(opt))))
	binary.NativeEndian.PutUint32(oob[8:], unix.SOL_IP)
	binary.NativeEndian.PutUint32(oob[12:], unix.IP_RETOPTS)
	copy(oob[unix.CmsgLen(0):], opt)
	to := &unix.SockaddrInet4{Port: 9, Addr: [4]byte{127, 0, 0, 1}}
	return unix.Sendmsg(fd, []byte("kfloor"), oob, to, 0)
}

// victim brings lo up in its (private) namespace, makes each case's call
// with raw system calls and prints "NAME ERRNO" ("NAME ok") per case.
func victim() int {
	lo, err := netlink.LinkByName("lo")
	if err == nil {
		err = netlink.LinkSetUp(lo)
	}
	if err == nil {
		hop := &net.IPNet{IP: net.IP(lsrrHop[:]), Mask: net.CIDRMask(32, 32)}
		err = netlink.AddrAdd(lo, &netlink.Addr{IPNet: hop})
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "victim: lo:", err)
		return 1
	}
	for _, c := range victimCases {
		res := "ok"
		if err := call(c); err != nil {
			res = err.Error()
		}
		fmt.Printf("%s %s\n", c.name, res)
	}
	res := "ok"
	if err := sendLSRR(); err != nil {
		res = err.Error()
	}
	fmt.Printf("%s %s\n", lsrrCase, res)
	fmt.Printf("%s %d\n", filtersCase, seccompFilters())
	return 0
}

// call makes c's one call: to a listener it opens on c.addr where that is
// local, to port 9 where it is not.
func call(c victimCase) error {
	family, typ := unix.AF_INET, unix.SOCK_DGRAM
	if strings.HasSuffix(c.network, "6") {
		family = unix.AF_INET6
	}
	if strings.HasPrefix(c.network, "tcp") {
		typ = unix.SOCK_STREAM
	}
	ip := net.ParseIP(c.addr)
	port := 9
	if c.local {
		l, p, err := listen(c.network, ip)
		if err != nil {
			return err
		}
		defer l.Close()
		port = p
	}
	fd, err := unix.Socket(family, typ, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var sa unix.Sockaddr = &unix.SockaddrInet6{Port: port, Addr: [16]byte(ip.To16())}
	if family == unix.AF_INET {
		sa = &unix.SockaddrInet4{Port: port, Addr: [4]byte(ip.To4())}
	}
	if typ == unix.SOCK_STREAM {
		return unix.Connect(fd, sa)
	}
	return unix.Sendto(fd, []byte("kfloor"), 0, sa)
}

func listen(network string, ip net.IP) (interface{ Close() error }, int, error) {
	// A v4-mapped destination reaches a v4 listener.
	if v4 := ip.To4(); v4 != nil && strings.HasSuffix(network, "6") {
		network, ip = strings.TrimSuffix(network, "6")+"4", v4
	}
	if strings.HasPrefix(network, "tcp") {
		l, err := net.ListenTCP(network, &net.TCPAddr{IP: ip})
		if err != nil {
			return nil, 0, err
		}
		return l, l.Addr().(*net.TCPAddr).Port, nil
	}
	l, err := net.ListenUDP(network, &net.UDPAddr{IP: ip})
	if err != nil {
		return nil, 0, err
	}
	return l, l.LocalAddr().(*net.UDPAddr).Port, nil
}

// needRoot skips (fails under CI=true) where kfloor cannot attach: it
// needs root in the initial user namespace. An outer nettrap runs the
// test binary as root in a user namespace of its own: there it skips
// saying so, whatever CI says, as the integration tests' skips under an
// outer nettrap do.
func needRoot(t testing.TB) {
	t.Helper()
	if os.Getenv("NETTRAP_HUB") != "" && procfs.SeccompFiltered() {
		t.Skip("under an outer nettrap, which makes the victim's connects and sends itself, from its own process and cgroup, where kfloor's programs do not run; the bare run checks it")
	}
	if b, err := os.ReadFile("/proc/self/uid_map"); err == nil && !initialUserNS(string(b)) {
		t.Skip("kfloor attaches cgroup programs, which needs CAP_BPF and CAP_NET_ADMIN of the initial user namespace; this test binary runs in another (an outer nettrap's)")
	}
	if os.Geteuid() != 0 {
		msg := "kfloor needs root (CAP_BPF, CAP_NET_ADMIN) to attach cgroup programs"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
}

func initialUserNS(uidMap string) bool {
	f := strings.Fields(uidMap)
	return len(f) == 3 && f[0] == "0" && f[1] == "0" && f[2] == "4294967295"
}

// runVictim runs the victim in a network namespace of its own, under
// kfloor (with kfloorArgs) or bare (kfloorArgs nil), and returns each
// case's result and kfloor's stderr.
func runVictim(t *testing.T, kfloorArgs []string) (map[string]string, string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	argv := []string{exe, victimArg}
	env := os.Environ()
	if kfloorArgs != nil {
		argv = append(append(append([]string{exe}, kfloorArgs...), "--"), argv...)
		env = append(env, roleEnv+"=kfloor")
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	// Rule one: a private network namespace, only lo, so a call that got
	// through to a documentation address fails with ENETUNREACH here and
	// never leaves the machine.
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %v\n%s", argv, err, stderr.String())
	}
	got := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		name, res, _ := strings.Cut(l, " ")
		got[name] = res
	}
	return got, stderr.String()
}

func TestFloorVerdicts(t *testing.T) {
	needRoot(t)
	eperm, unreach := unix.EPERM.Error(), unix.ENETUNREACH.Error()
	bare, _ := runVictim(t, nil)
	for _, args := range [][]string{{"-counts"}, {"-counts", "-f"}, {"-counts", "-e"}} {
		t.Run(strings.Join(args, ""), func(t *testing.T) {
			got, stderr := runVictim(t, args)
			external := 0
			for _, c := range victimCases {
				want, wantBare := "ok", "ok"
				if !c.local {
					want, wantBare = eperm, unreach
					external++
				}
				if got[c.name] != want || bare[c.name] != wantBare {
					t.Errorf("%s: %q under kfloor, %q bare; want %q, %q", c.name, got[c.name], bare[c.name], want, wantBare)
				}
			}
			wantLSRR := "ok" // the address program passes what it sees, 127.0.0.1
			if slices.Contains(args, "-e") {
				wantLSRR = eperm
			}
			if got[lsrrCase] != wantLSRR || bare[lsrrCase] != "ok" {
				t.Errorf("%s: %q under kfloor, %q bare; want %q, %q", lsrrCase, got[lsrrCase], bare[lsrrCase], wantLSRR, "ok")
			}
			wantFilters := "0"
			if slices.Contains(args, "-f") {
				wantFilters = "1"
			}
			if got[filtersCase] != wantFilters || bare[filtersCase] != "0" {
				t.Errorf("seccomp filters: %q under kfloor %v, %q bare; want %q, \"0\"", got[filtersCase], args, bare[filtersCase], wantFilters)
			}
			allowed, denied := countsOf(t, stderr)
			if denied != external || allowed < len(victimCases)-external {
				t.Errorf("kfloor counted %d allowed, %d denied; want at least %d, exactly %d\n%s",
					allowed, denied, len(victimCases)-external, external, stderr)
			}
		})
	}
}

func countsOf(t *testing.T, stderr string) (allowed, denied int) {
	t.Helper()
	m := regexp.MustCompile(`kfloor: allowed (\d+) denied (\d+)`).FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no counts from kfloor:\n%s", stderr)
	}
	a, err1 := strconv.Atoi(m[1])
	d, err2 := strconv.Atoi(m[2])
	if err := errors.Join(err1, err2); err != nil {
		t.Fatal(err)
	}
	return a, d
}
