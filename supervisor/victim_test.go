package supervisor_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// victimRole performs one operation and prints one result word per call it
// makes: "ok" or the errno name.
func victimRole(op []string) int {
	if len(op) == 0 {
		fmt.Println("no-op")
		return 3
	}
	arg := func(i int) string { return opArg(op, i) }
	if out, ok := sockoptVictim(op); ok {
		fmt.Println(out)
		return 0
	}
	if out, ok := unixVictim(op); ok {
		fmt.Println(out)
		return 0
	}
	switch op[0] {
	case "netlink-handover":
		fmt.Println(netlinkHandover())
	case "userns": // userns ADDR: its user namespace, uid map, setns back, a connect to ADDR
		fmt.Println(usernsVictim(arg(1)))
	case "reach-parent": // reach-parent: kill(parent, 0) and open its /proc/PID/mem
		fmt.Println(reachParent())
	case "netlink-storm": // netlink-storm N: N netlink sockets made while signals rain
		n, _ := strconv.Atoi(arg(1))
		fmt.Println(netlinkStorm(n))
	case "clone-untraced": // clone-untraced ADDR: a CLONE_UNTRACED child connects to ADDR
		fmt.Println(cloneUntraced(arg(1)))
	case "connect":
		fmt.Println(result(connectTo(arg(1))))
	case "i386-connect": // i386-connect ADDR: the i386 ABI's connect, from this process
		fmt.Println(result(i386Connect(arg(1))))
	case "connect-storm": // connect-storm N ADDR: N blocking connects while signals rain
		n, _ := strconv.Atoi(arg(1))
		fmt.Println(connectStorm(n, arg(2)))
	case "sendto-storm": // sendto-storm N ADDR: N datagrams while signals rain
		n, _ := strconv.Atoi(arg(1))
		fmt.Println(sendtoStorm(n, arg(2), false))
	case "sendmsg-storm": // sendmsg-storm N ADDR: N 4 KiB datagrams through sendmsg while signals rain
		n, _ := strconv.Atoi(arg(1))
		fmt.Println(sendtoStorm(n, arg(2), true))
	case "connect-loop": // connect-loop N ADDR: N connects one after another; ns per connect
		n, _ := strconv.Atoi(arg(1))
		fmt.Println(connectLoop(n, arg(2)))
	case "connect-raw": // connect(fd, ptr, len) with a chosen pointer and length
		ptr, _ := strconv.ParseUint(arg(1), 0, 64)
		n, _ := strconv.ParseInt(arg(2), 0, 64)
		fmt.Println(result(rawConnect(ptr, n)))
	case "connect-notsock": // connect-notsock ADDR|unix: connect on a descriptor that is no socket
		fmt.Println(result(connectNotSock(arg(1))))
	case "connect-len": // a valid sockaddr with a chosen length
		n, _ := strconv.Atoi(arg(1))
		fmt.Println(result(connectLen(arg(2), n)))
	case "sendmsg-namelen":
		n, _ := strconv.Atoi(arg(1))
		fmt.Println(result(sendmsgNamelen(arg(2), int32(n))))
	case "sendmmsg":
		fmt.Println(sendmmsg(op[1:], 0))
	case "sendmmsg-vlen":
		vlen, _ := strconv.ParseUint(arg(1), 0, 32)
		fmt.Println(sendmmsg(op[2:], uint32(vlen)))
	case "udp-exchange": // udp-exchange ADDR: connect, send, print the reply
		fmt.Println(udpExchange(arg(1), arg(2) == "sendto"))
	case "race-connect": // race-connect ALLOWED DENIED TRIES [until-leak]
		n, _ := strconv.Atoi(arg(3))
		fmt.Println(raceConnect(arg(1), arg(2), n, arg(4) == "until-leak"))
	case "many-connect":
		n, _ := strconv.Atoi(arg(1))
		fmt.Println(manyConnect(n, arg(2)))
	case "sendmsg-payload": // sendmsg-payload ADDR: payloadText in two vectors, with an IP_TOS control message
		fmt.Println(result(sendmsgPayload(arg(1), false)))
	case "sendmsg-badbuf": // sendmsg-badbuf ADDR: the second vector's pointer is not mapped
		fmt.Println(result(sendmsgPayload(arg(1), true)))
	case "sendto-payload": // sendto-payload ADDR: one datagram of payloadText
		fmt.Println(result(sendtoPayload(arg(1), false)))
	case "sendto-badbuf": // sendto-badbuf ADDR: a payload pointer that is not mapped
		fmt.Println(result(sendtoPayload(arg(1), true)))
	case "stray": // stray DIR ADDR: leave a wait-connect DIR ADDR running behind
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "NETTRAP_VICTIM_OP=wait-connect "+arg(1)+" "+arg(2))
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			fmt.Println("start-failed")
			return 1
		}
		fmt.Println("ok")
	case "exec":
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "NETTRAP_VICTIM_OP="+strings.Join(op[1:], " "))
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Println("exec-failed")
		}
	case "kill-mid-call": // a child stalls in connect, is killed, then we connect
		fmt.Println(killMidCall(arg(1), arg(2)))
	case "uffd-stall": // uffd-stall ALLOWED: a thread whose address read never returns does not hold up another's connect
		fmt.Println(uffdStall(arg(1)))
	case "held-aside": // held-aside STALLED ALLOWED: a thread held in a decision does not hold up another's connect
		fmt.Println(heldAside(arg(1), arg(2)))
	case "wait-connect": // for the supervisor-killed tests: pid to DIR/ready, wait for DIR/go, result to DIR/result
		dir := arg(1)
		os.WriteFile(dir+"/ready.tmp", []byte(strconv.Itoa(os.Getpid())), 0o644)
		os.Rename(dir+"/ready.tmp", dir+"/ready")
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if _, err := os.Stat(dir + "/go"); err == nil {
				break
			}
		}
		os.WriteFile(dir+"/result", []byte(result(connectTo(arg(2)))), 0o644)
	case "ptrace-parent": // attach to the unconfined supervisor
		err := unix.PtraceAttach(os.Getppid())
		if err == nil {
			unix.PtraceDetach(os.Getppid())
		}
		fmt.Println(result(err))
	case "pidfd-getfd-parent":
		pidfd, err := unix.PidfdOpen(os.Getppid(), 0)
		if err == nil {
			var fd int
			fd, err = unix.PidfdGetfd(pidfd, 0, 0)
			if err == nil {
				unix.Close(fd)
			}
		}
		fmt.Println(result(err))
	case "pidfd-getfd-self": // take our own stdout: a working, close-on-exec descriptor
		pidfd, err := unix.PidfdOpen(os.Getpid(), 0)
		if err == nil {
			var fd, fl int
			if fd, err = unix.PidfdGetfd(pidfd, 1, 0); err == nil {
				if fl, err = unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err == nil && fl&unix.FD_CLOEXEC == 0 {
					err = unix.EINVAL
				}
				unix.Close(fd)
			}
		}
		fmt.Println(result(err))
	case "pidfd-getfd-reaped": // a pidfd of a child that exited and was reaped
		fmt.Println(result(pidfdGetfdReaped()))
	case "pidfd-getfd-race": // PID FD TRIES [until-leak]: see pidfdGetfdRace
		fmt.Println(pidfdGetfdRace(arg(1), arg(2), arg(3), arg(4) == "until-leak"))
	case "setsockopt-lsrr": // an IPv4 loose source route via ADDR
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err == nil {
			err = unix.SetsockoptString(fd, unix.IPPROTO_IP, unix.IP_OPTIONS, string(lsrr(arg(1))))
			unix.Close(fd)
		}
		fmt.Println(result(err))
	case "sendmsg-retopts": // a datagram to ADDR, with a source route via ADDR2 if given
		fmt.Println(result(sendmsgRetopts(arg(1), arg(2))))
	case "socket-raw":
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_ICMP)
		if err == nil {
			unix.Close(fd)
		}
		fmt.Println(result(err))
	default:
		fmt.Println("unknown-op")
		return 3
	}
	return 0
}

func result(err error) string {
	if err == nil {
		return "ok"
	}
	if e, ok := err.(syscall.Errno); ok {
		return unix.ErrnoName(e)
	}
	return "error:" + strings.ReplaceAll(err.Error(), " ", "_")
}

func sockaddr(s string) (unix.Sockaddr, int) {
	ap := netip.MustParseAddrPort(s)
	if ap.Addr().Is4() {
		return &unix.SockaddrInet4{Addr: ap.Addr().As4(), Port: int(ap.Port())}, unix.AF_INET
	}
	return &unix.SockaddrInet6{Addr: ap.Addr().As16(), Port: int(ap.Port())}, unix.AF_INET6
}

// rawInet4 is a sockaddr_in as bytes.
func rawInet4(s string) []byte {
	ap := netip.MustParseAddrPort(s)
	b := make([]byte, 16)
	binary.NativeEndian.PutUint16(b, unix.AF_INET)
	binary.BigEndian.PutUint16(b[2:], ap.Port())
	a := ap.Addr().As4()
	copy(b[4:], a[:])
	return b
}

func connectTo(s string) error {
	sa, fam := sockaddr(s)
	fd, err := unix.Socket(fam, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Connect(fd, sa)
}

func rawConnect(ptr uint64, n int64) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	_, _, e := unix.Syscall(unix.SYS_CONNECT, uintptr(fd), uintptr(ptr), uintptr(n))
	if e != 0 {
		return e
	}
	return nil
}

// connectNotSock connects /dev/null to s, an inet address, or to a
// unix path ("unix").
func connectNotSock(s string) error {
	fd, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if s == "unix" {
		return unix.Connect(fd, &unix.SockaddrUnix{Name: "/nonexistent/nettrap-test"})
	}
	sa, _ := sockaddr(s)
	return unix.Connect(fd, sa)
}

func connectLen(s string, n int) error {
	b := make([]byte, 256)
	copy(b, rawInet4(s))
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	_, _, e := unix.Syscall(unix.SYS_CONNECT, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(n))
	if e != 0 {
		return e
	}
	return nil
}

func udpSocket() (int, error) {
	return unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
}

func sendmsgNamelen(s string, namelen int32) error {
	fd, err := udpSocket()
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	name := make([]byte, 256)
	copy(name, rawInet4(s))
	payload := []byte("x")
	iov := unix.Iovec{Base: &payload[0]}
	iov.SetLen(1)
	msg := unix.Msghdr{Name: &name[0], Namelen: uint32(namelen), Iov: &iov}
	msg.SetIovlen(1)
	_, _, e := unix.Syscall(unix.SYS_SENDMSG, uintptr(fd), uintptr(unsafe.Pointer(&msg)), 0)
	if e != 0 {
		return e
	}
	return nil
}

// mmsghdr is struct mmsghdr.
type mmsghdr struct {
	hdr unix.Msghdr
	n   uint32
	_   [4]byte
}

// sendmmsg sends one datagram to each address in one sendmmsg call and
// prints how many the kernel says it sent, or the errno. vlen 0 means
// len(addrs).
func sendmmsg(addrs []string, vlen uint32) string {
	fd, err := udpSocket()
	if err != nil {
		return result(err)
	}
	defer unix.Close(fd)
	names := make([][]byte, len(addrs))
	msgs := make([]mmsghdr, len(addrs))
	payload := []byte("x")
	iov := unix.Iovec{Base: &payload[0]}
	iov.SetLen(1)
	for i, a := range addrs {
		names[i] = rawInet4(a)
		msgs[i].hdr = unix.Msghdr{Name: &names[i][0], Namelen: 16, Iov: &iov}
		msgs[i].hdr.SetIovlen(1)
	}
	if vlen == 0 {
		vlen = uint32(len(addrs))
	}
	// The vector is followed by an unmapped page, so that a vlen larger
	// than the vector makes the kernel (and the supervisor) fault there.
	mem, err := unix.Mmap(-1, 0, 2*unix.Getpagesize(), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		return result(err)
	}
	unix.Munmap(mem[unix.Getpagesize():])
	size := len(msgs) * int(unsafe.Sizeof(mmsghdr{}))
	off := unix.Getpagesize() - size
	copy(mem[off:], unsafe.Slice((*byte)(unsafe.Pointer(&msgs[0])), size))
	n, _, e := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(fd), uintptr(unsafe.Pointer(&mem[off])), uintptr(vlen), 0, 0, 0)
	if e != 0 {
		return unix.ErrnoName(e)
	}
	return "sent:" + strconv.Itoa(int(n))
}

// lsrr is an IPv4 loose source route option through one hop.
func lsrr(hop string) []byte {
	a := netip.MustParseAddrPort(hop).Addr().As4()
	// type 131 (LSRR), length 7, pointer 4, the hop, then NOP padding.
	return []byte{131, 7, 4, a[0], a[1], a[2], a[3], 1}
}

func sendmsgRetopts(dst, hop string) error {
	fd, err := udpSocket()
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	sa, _ := sockaddr(dst)
	var oob []byte
	if hop != "" {
		opt := lsrr(hop)
		oob = make([]byte, unix.CmsgSpace(len(opt)))
		h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
		h.Level, h.Type = unix.IPPROTO_IP, unix.IP_RETOPTS
		h.SetLen(unix.CmsgLen(len(opt)))
		copy(oob[unix.CmsgLen(0):], opt)
	}
	return unix.Sendmsg(fd, []byte("x"), oob, sa, 0)
}

func manyConnect(n int, addr string) string {
	var ok atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan string, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := connectTo(addr); err != nil {
				errs <- result(err)
				return
			}
			ok.Add(1)
		}()
	}
	wg.Wait()
	close(errs)
	if first, bad := <-errs; bad {
		return fmt.Sprintf("ok:%d first-error:%s", ok.Load(), first)
	}
	return fmt.Sprintf("ok:%d", ok.Load())
}

// killMidCall starts a child whose connect to stalled the decider holds,
// kills the child once the supervisor says the call is held (see
// stallNotice), then connects to allowed itself.
func killMidCall(stalled, allowed string) string {
	if err := unix.SetNonblock(stallNoticeFD, true); err != nil {
		return "no-stall-notices:" + result(err)
	}
	notices := os.NewFile(stallNoticeFD, "stall notices") // pollable: it is non-blocking
	defer notices.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "NETTRAP_VICTIM_OP=connect "+stalled)
	if err := cmd.Start(); err != nil {
		return "start-failed"
	}
	// The deadline only bounds a broken run.
	_ = notices.SetReadDeadline(time.Now().Add(20 * time.Second))
	_, err := notices.Read(make([]byte, 1))
	cmd.Process.Kill()
	cmd.Wait()
	if err != nil {
		return "never-held:" + result(err)
	}
	return result(connectTo(allowed))
}

// heldAside connects to stalled on a thread of its own, which the test
// decider holds until this process is gone, and once it is held connects
// to allowed: that must succeed while the first is still held (the
// notify loop's watchdog passes the turn to a new receiver). Without the
// hand-off the second connect would be received only after the first
// call's decision, at the decider's 20 s deadline: "held-up".
func heldAside(stalled, allowed string) string {
	notices := os.NewFile(stallNoticeFD, "stall notices")
	var returned atomic.Bool
	go func() {
		connectTo(stalled)
		returned.Store(true)
	}()
	if _, err := notices.Read(make([]byte, 1)); err != nil {
		return "never-held:" + result(err)
	}
	err := connectTo(allowed)
	if returned.Load() {
		return "held-up"
	}
	return result(err)
}

// opArg is the victim operation's word i, or "" past its end.
func opArg(op []string, i int) string {
	if i < len(op) {
		return op[i]
	}
	return ""
}

// cloneUntraced makes a child with CLONE_UNTRACED, which connects to addr
// (raw syscalls only: the child is a copy of a Go process made behind the
// runtime's back) and exits. It returns the clone's errno, or "cloned".
func cloneUntraced(addr string) string {
	sa := rawInet4(addr)
	r1, _, errno := unix.RawSyscall6(unix.SYS_CLONE, unix.CLONE_UNTRACED|uintptr(unix.SIGCHLD), 0, 0, 0, 0, 0)
	if errno != 0 {
		return result(errno)
	}
	if r1 == 0 {
		fd, _, _ := unix.RawSyscall(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM, 0)
		unix.RawSyscall(unix.SYS_CONNECT, fd, uintptr(unsafe.Pointer(&sa[0])), uintptr(len(sa)))
		unix.RawSyscall(unix.SYS_EXIT_GROUP, 0, 0, 0)
	}
	var ws unix.WaitStatus
	unix.Wait4(int(r1), &ws, 0, nil)
	return "cloned"
}

// netlinkStorm makes n netlink sockets, half with SOCK_CLOEXEC, while
// another thread sends the process SIGURG (Go's preemption signal, which
// its runtime takes in stride) as fast as it can: under the ptrace engine
// each socket is handed over through several calls, between which a
// signal handler runs. Every socket must come out valid, with the flags
// asked for.
func netlinkStorm(n int) string {
	return underSignals(func() string { return netlinkSockets(n) })
}

// netlinkSockets makes netlinkStorm's sockets.
func netlinkSockets(n int) string {
	for i := 0; i < n; i++ {
		typ := unix.SOCK_RAW
		if i%2 == 0 {
			typ |= unix.SOCK_CLOEXEC
		}
		fd, err := unix.Socket(unix.AF_NETLINK, typ, unix.NETLINK_ROUTE)
		if err != nil {
			return fmt.Sprintf("socket %d: %v", i, err)
		}
		proto, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_PROTOCOL)
		fdFlags, ferr := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		unix.Close(fd)
		if err != nil || ferr != nil || proto != unix.NETLINK_ROUTE {
			return fmt.Sprintf("socket %d: protocol %d %v %v", i, proto, err, ferr)
		}
		if want := typ&unix.SOCK_CLOEXEC != 0; (fdFlags&unix.FD_CLOEXEC != 0) != want {
			return fmt.Sprintf("socket %d: cloexec %v, want %v", i, !want, want)
		}
	}
	return fmt.Sprintf("ok:%d", n)
}

// pidfdGetfdReaped starts a child (this binary as a victim without an
// op, which exits at once), opens a pidfd of it, reaps it, and takes its
// fd 0 through the pidfd.
func pidfdGetfdReaped() error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), roleEnv+"=victim", "NETTRAP_VICTIM_OP=")
	if err := cmd.Start(); err != nil {
		return err
	}
	pidfd, err := unix.PidfdOpen(cmd.Process.Pid, 0)
	_ = cmd.Wait()
	if err != nil {
		return err
	}
	defer unix.Close(pidfd)
	fd, err := unix.PidfdGetfd(pidfd, 0, 0)
	if err == nil {
		unix.Close(fd)
	}
	return err
}

// pidfdGetfdRace makes pidfd_getfd(n, FD) TRIES times on a pidfd of its
// own (allowed: the caller itself), while another thread keeps putting a
// pidfd of the unconfined process PID on the same number n. The caller
// has no descriptor FD, PID has: every success took PID's. It prints
// "took:N", N the descriptors taken from PID; untilLeak stops at the first.
func pidfdGetfdRace(pid, fdArg, triesArg string, untilLeak bool) string {
	other, _ := strconv.Atoi(pid)
	target, _ := strconv.Atoi(fdArg)
	tries, _ := strconv.Atoi(triesArg)
	self, err := unix.PidfdOpen(os.Getpid(), 0)
	if err != nil {
		return result(err)
	}
	theirs, err := unix.PidfdOpen(other, 0)
	if err != nil {
		return result(err)
	}
	n, err := unix.Dup(self)
	if err != nil {
		return result(err)
	}
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; !stop.Load(); i++ {
			src := self
			if i&1 == 1 {
				src = theirs
			}
			unix.Dup2(src, n)
		}
	}()
	took := 0
	for i := 0; i < tries; i++ {
		if fd, err := unix.PidfdGetfd(n, target, 0); err == nil {
			took++
			unix.Close(fd)
			if untilLeak {
				break
			}
		}
	}
	stop.Store(true)
	<-done
	return fmt.Sprintf("took:%d", took)
}

// connectLoop connects to addr n times, one after another, and says how
// long each took on average ("ns:N"), or the first result that was not
// the decider's EPERM for a denied address.
func connectLoop(n int, addr string) string {
	start := time.Now()
	for range n {
		if err := connectTo(addr); !errors.Is(err, unix.EPERM) {
			return "unexpected:" + result(err)
		}
	}
	return fmt.Sprintf("ns:%d", time.Since(start).Nanoseconds()/int64(max(n, 1)))
}
