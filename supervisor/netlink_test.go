package supervisor_test

import (
	"encoding/binary"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/landlock"
)

// TestNetlinkHandedOver: in the starting namespace a netlink socket is
// made by the supervisor without capabilities and handed over: its flags
// are the ones asked for, a dump works, and a change is refused by the
// kernel with EPERM in the ack, for root too. A send that names the
// kernel (the kernel then checks the sender, not the socket) is made by
// the supervisor from its thread without capabilities: refused the same. The change is harmless
// either way (deleting a route that does not exist): with capabilities
// the kernel answers ESRCH, which the unconfined control run shows.
//
// With --userns=off (under the ptrace engine without a Landlock domain,
// which would refuse its hand-over); under auto (as root: the victim in a user namespace
// of its own) the answers are the same, whether the ptrace engine hands
// the sockets over or not (the victim's own carry no capability over the
// starting namespace).
func TestNetlinkHandedOver(t *testing.T) {
	skipUnderNettrap(t, "the enclosing nettrap decides this test's RTM_DELROUTE sends in its starting network namespace first, and denies them (no change there is let through), so neither the EPERM in the ack nor the control's ESRCH can show")
	for _, userns := range []string{"off", "auto"} {
		env := []string{usernsEnv + "=" + userns}
		if underPtrace() && userns == "off" {
			// The ptrace engine hands over only outside a Landlock
			// domain (supervisor's ptraceDomain): its pidfd_getfd takes
			// from nettrap.
			env = append(env, landlock.NoLandlockEnv+"=1")
		}
		out, rep := confinedWith(t, env, "netlink-handover")
		got := strings.Join(out, " ")
		want := "cloexec=true nonblock=true plain=false dump=ok delroute=EPERM delroute-sendto=EPERM"
		if got != want {
			t.Errorf("confined, --userns=%s: %q, want %q", userns, got, want)
		}
		// Sockets: 2 made by hand, NetlinkRIB's, 2 by delRoute; sends:
		// the dump request and the addressed RTM_DELROUTE.
		if userns == "off" && rep.Capless < 7 {
			t.Errorf("%d netlink calls made without capabilities, want 7", rep.Capless)
		}
		if len(rep.Errors) > 0 {
			t.Errorf("supervisor errors: %v", rep.Errors)
		}
	}
	if os.Geteuid() != 0 {
		return
	}
	if got := netlinkHandover(); !strings.HasSuffix(got, "delroute=ESRCH delroute-sendto=ESRCH") {
		t.Errorf("unconfined root: %q, want ESRCH both ways (else the EPERM above proves nothing)", got)
	}
}

// netlinkHandover (a victim op) reports the flags of netlink sockets made
// with and without SOCK_CLOEXEC, whether a link dump works, and the
// kernel's answer to RTM_DELROUTE of 192.0.2.123/32 sent with write(2).
func netlinkHandover() string {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, unix.NETLINK_ROUTE)
	if err != nil {
		return "socket:" + unix.ErrnoName(err.(syscall.Errno))
	}
	fdFlags, _ := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
	flFlags, _ := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	unix.Close(fd)
	plain, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE)
	if err != nil {
		return "socket:" + err.Error()
	}
	plainFlags, _ := unix.FcntlInt(uintptr(plain), unix.F_GETFD, 0)
	unix.Close(plain)
	dump := "ok"
	if _, err := syscall.NetlinkRIB(unix.RTM_GETLINK, unix.AF_UNSPEC); err != nil {
		dump = err.Error()
	}
	return fmt.Sprintf("cloexec=%v nonblock=%v plain=%v dump=%s delroute=%s delroute-sendto=%s",
		fdFlags&unix.FD_CLOEXEC != 0, flFlags&unix.O_NONBLOCK != 0, plainFlags&unix.FD_CLOEXEC != 0, dump,
		delRoute(false), delRoute(true))
}

// delRoute sends RTM_DELROUTE for 192.0.2.123/32 (no such route), with
// write(2) or with sendto naming the kernel, and returns the errno name
// of the ack.
func delRoute(addressed bool) string {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return "socket:" + err.Error()
	}
	defer unix.Close(fd)
	ne := binary.NativeEndian
	msg := make([]byte, unix.NLMSG_HDRLEN+12+8)
	ne.PutUint32(msg[0:], uint32(len(msg)))
	ne.PutUint16(msg[4:], unix.RTM_DELROUTE)
	ne.PutUint16(msg[6:], unix.NLM_F_REQUEST|unix.NLM_F_ACK)
	rt := msg[unix.NLMSG_HDRLEN:]
	rt[0], rt[1], rt[4] = unix.AF_INET, 32, unix.RT_TABLE_MAIN
	ne.PutUint16(rt[12:], 8)
	ne.PutUint16(rt[14:], unix.RTA_DST)
	copy(rt[16:], []byte{192, 0, 2, 123})
	if addressed {
		if err := unix.Sendto(fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
			return "sendto:" + err.Error()
		}
	} else if _, err := unix.Write(fd, msg); err != nil {
		return "write:" + err.Error()
	}
	buf := make([]byte, 4096)
	n, err := unix.Read(fd, buf)
	if err != nil || n < unix.NLMSG_HDRLEN+4 || ne.Uint16(buf[4:]) != unix.NLMSG_ERROR {
		return fmt.Sprintf("no-ack(%v)", err)
	}
	e := -int32(ne.Uint32(buf[unix.NLMSG_HDRLEN:]))
	if e == 0 {
		return "ok"
	}
	return unix.ErrnoName(syscall.Errno(e))
}
