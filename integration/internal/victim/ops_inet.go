package main

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// ioTimeout only bounds a broken run; no operation is expected to take long.
const ioTimeout = 20 * time.Second

func tcpConnect(args []string) (any, error) {
	return withSocket(args[0], unix.SOCK_STREAM, func(fd int, sa unix.Sockaddr, ap netip.AddrPort) (any, error) {
		return nil, sysErr("connect", unix.Connect(fd, sa))
	})
}

func tcpConnectNB(args []string) (any, error) {
	return withSocket(args[0], unix.SOCK_STREAM|unix.SOCK_NONBLOCK, func(fd int, sa unix.Sockaddr, _ netip.AddrPort) (any, error) {
		err := unix.Connect(fd, sa)
		if err == nil {
			return "connected at once", nil
		}
		if err != unix.EINPROGRESS {
			return nil, sysErr("connect", err)
		}
		if err := pollOut(fd); err != nil {
			return nil, err
		}
		soerr, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR)
		if err != nil {
			return nil, sysErr("getsockopt", err)
		}
		if soerr != 0 {
			return nil, sysErr("connect", unix.Errno(soerr))
		}
		return "connected after poll", nil
	})
}

func pollOut(fd int) error {
	pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
	for {
		n, err := unix.Poll(pfd, int(ioTimeout/time.Millisecond))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return sysErr("poll", err)
		}
		if n == 0 {
			return fmt.Errorf("poll: connect still in progress after %v", ioTimeout)
		}
		return nil
	}
}

func netDial(args []string) (any, error) {
	c, err := net.DialTimeout(args[0], args[1], ioTimeout)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if _, err := c.Write(payload("net-dial")); err != nil {
		return nil, err
	}
	return c.RemoteAddr().String(), nil
}

func udpSendto(args []string) (any, error) {
	return withSocket(args[0], unix.SOCK_DGRAM, func(fd int, sa unix.Sockaddr, ap netip.AddrPort) (any, error) {
		if err := allowBroadcast(fd, ap.Addr().Is4()); err != nil {
			return nil, err
		}
		return nil, sysErr("sendto", unix.Sendto(fd, payload("udp-sendto"), 0, sa))
	})
}

// allowBroadcast sets SO_BROADCAST so that 255.255.255.255 is a real send,
// not an EACCES from the kernel.
func allowBroadcast(fd int, v4 bool) error {
	if !v4 {
		return nil
	}
	return sysErr("setsockopt", unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_BROADCAST, 1))
}

func udpSendmsg(args []string) (any, error) {
	return withSocket(args[0], unix.SOCK_DGRAM, func(fd int, sa unix.Sockaddr, ap netip.AddrPort) (any, error) {
		if err := allowBroadcast(fd, ap.Addr().Is4()); err != nil {
			return nil, err
		}
		n, err := unix.SendmsgN(fd, payload("udp-sendmsg"), nil, sa, 0)
		return n, sysErr("sendmsg", err)
	})
}

func udpSendmmsg(args []string) (any, error) {
	a1, err := parseAddr(args[0])
	if err != nil {
		return nil, err
	}
	a2, err := parseAddr(args[1])
	if err != nil {
		return nil, err
	}
	if family(a1) != family(a2) {
		return nil, usageError{"udp-sendmmsg: both addresses must be of one family"}
	}
	fd, err := unix.Socket(family(a1), unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, sysErr("socket", err)
	}
	defer unix.Close(fd)
	n, err := sendmmsg2(fd, a1, a2, payload("udp-sendmmsg"))
	return n, sysErr("sendmmsg", err)
}

func udpConnectWrite(args []string) (any, error) {
	return withSocket(args[0], unix.SOCK_DGRAM, func(fd int, sa unix.Sockaddr, ap netip.AddrPort) (any, error) {
		if err := unix.Connect(fd, sa); err != nil {
			return nil, sysErr("connect", err)
		}
		n, err := unix.Write(fd, payload("udp-connect-write"))
		return n, sysErr("write", err)
	})
}

// tcpFastopen connects and sends in one sendto on an unconnected socket:
// a connect that never calls connect(2).
func tcpFastopen(args []string) (any, error) {
	return withSocket(args[0], unix.SOCK_STREAM, func(fd int, sa unix.Sockaddr, ap netip.AddrPort) (any, error) {
		return nil, sysErr("sendto", unix.Sendto(fd, payload("tcp-fastopen"), unix.MSG_FASTOPEN, sa))
	})
}

// unspecSendto sends with a sockaddr whose family is AF_UNSPEC but whose
// bytes are an IPv4 address: udp_sendmsg accepts AF_UNSPEC as AF_INET for
// old programs, so a guard that only looks at AF_INET would miss it.
func unspecSendto(args []string) (any, error) {
	ap, err := parseAddr4(args[0])
	if err != nil {
		return nil, err
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, sysErr("socket", err)
	}
	defer unix.Close(fd)
	return nil, sysErr("sendto", sendtoUnspec(fd, ap, payload("unspec-sendto")))
}

func sleepThenConnect(args []string) (any, error) {
	d, err := time.ParseDuration(args[0] + "s")
	if err != nil {
		return nil, usageError{fmt.Sprintf("bad seconds %q", args[0])}
	}
	time.Sleep(d)
	return tcpConnect(args[1:])
}

// blockInConnect announces on stderr that it is about to connect, then makes
// a blocking connect: aimed at sandbox.BlackholeAddr it stays in the kernel.
func blockInConnect(args []string) (any, error) {
	if _, err := parseAddr(args[0]); err != nil {
		return nil, err
	}
	fmt.Fprintln(os.Stderr, "victim: connecting")
	return tcpConnect(args)
}
