package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

type result struct {
	Op    string `json:"op"`
	OK    bool   `json:"ok"`
	Errno string `json:"errno,omitempty"`
	Err   string `json:"err,omitempty"`
}

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	op, args := os.Args[1], os.Args[2:]
	var err error
	switch {
	case op == "udp" && len(args) >= 2:
		err = sendUDP(args[0], args[1], args[2:])
	case op == "tcp" && len(args) >= 1:
		err = sendTCP(args[0], args[1:])
	case op == "join" && (len(args) == 2 || len(args) == 3):
		err = join(args[0], args[1], args[2:], 0)
	case op == "join-lo" && (len(args) == 2 || len(args) == 3):
		err = join(args[0], args[1], args[2:], 1)
	case op == "xdp" && len(args) == 6:
		err = xdpSend(args)
	case op == "udp-after" && len(args) >= 3:
		err = udpAfter(args[0], args[1], args[2:])
	case op == "socket" && len(args) == 1:
		err = socketOf(args[0])
	case op == "write-fd" && len(args) == 2:
		fd, _ := strconv.Atoi(args[0])
		_, err = unix.Write(fd, []byte(args[1]))
		err = sysErr("write", err)
	case op == "open-mem" && len(args) == 1:
		err = openProc("/proc/"+pid(args[0])+"/mem", unix.O_RDWR)
	case op == "route-nl" && len(args) == 3:
		err = routeNetlink(args[0], args[1], args[2])
	case op == "route-nl-away" && len(args) == 3:
		err = routeNetlinkAway(args[0], args[1], args[2])
	case op == "route-ioctl" && len(args) == 2:
		err = routeIoctl(args[0], args[1])
	case op == "route-ioctl-away" && len(args) == 2:
		err = routeIoctlAway(args[0], args[1])
	case op == "dnat" && len(args) == 1:
		err = dnatConnect(args[0])
	case op == "ipt-dnat" && len(args) == 2:
		err = iptDNATConnect(args[0], args[1])
	case op == "ipt-flush" && len(args) == 0:
		err = writeNat(false, "")
	case op == "ipt-empty" && len(args) == 0:
		err = iptEmpty()
	case op == "cgroup-connect" && len(args) == 1:
		err = cgroupConnect(args[0])
	case op == "read-nl" && len(args) == 0:
		err = readNetlink()
	case op == "own-netns-route" && len(args) == 1:
		err = ownNetnsRoute(args[0])
	case op == "veth-vxlan" && len(args) == 2:
		err = vethVxlan(args[0], args[1])
	case op == "own-topology" && len(args) == 0:
		err = ownTopology()
	case op == "veth-own" && len(args) == 0:
		err = vethOwn()
	case op == "macvlan" && len(args) == 4:
		err = macvlanOut(args[0], args[1], args[2], args[3])
	case op == "setns-dnat" && len(args) == 2:
		err = setnsDNAT(args[0], args[1])
	case op == "unix-send" && len(args) == 3:
		err = unixSend(args[0], args[1], args[2])
	case op == "tcp-send" && len(args) == 2:
		err = tcpSend(args[0], args[1])
	case op == "go-dial" && len(args) == 3:
		err = goDial(args[0], args[1], args[2])
	case op == "own-servers" && len(args) == 0:
		err = ownServers()
	case op == "own-servers-closing" && len(args) == 1:
		err = ownServersClosing(args[0])
	case op == "procmem" && len(args) >= 3 && len(args) <= 5:
		procMem(args[0], args[1], args[2], args[3:])
		return
	case op == "idle" && len(args) == 1:
		idle(args[0])
	case op == "open-fd" && len(args) == 2:
		err = openProc("/proc/"+pid(args[0])+"/fd/"+args[1], unix.O_RDWR)
	default:
		usage()
	}
	emit(op, err)
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: escapee udp|tcp|join|xdp|spawn-udp|write-fd|open-mem|open-fd ARGS... (see the package doc)")
	os.Exit(2)
}

func emit(op string, err error) {
	r := result{Op: op, OK: err == nil}
	if err != nil {
		r.Err = err.Error()
		var en syscall.Errno
		if errors.As(err, &en) {
			r.Errno = unix.ErrnoName(en)
		}
	}
	b, _ := json.Marshal(r)
	fmt.Printf("%s\n", b)
}

func sysErr(name string, err error) error {
	if err == nil {
		return nil
	}
	return os.NewSyscallError(name, err)
}

// families are the socket families socketOf knows, with a type each
// supports.
var families = map[string][2]int{
	"vsock": {unix.AF_VSOCK, unix.SOCK_STREAM}, "bluetooth": {unix.AF_BLUETOOTH, unix.SOCK_SEQPACKET},
	"can": {unix.AF_CAN, unix.SOCK_RAW}, "tipc": {unix.AF_TIPC, unix.SOCK_RDM},
	"alg": {unix.AF_ALG, unix.SOCK_SEQPACKET}, "rds": {unix.AF_RDS, unix.SOCK_SEQPACKET},
	"kcm": {unix.AF_KCM, unix.SOCK_DGRAM}, "qipcrtr": {unix.AF_QIPCRTR, unix.SOCK_DGRAM},
	"smc": {unix.AF_SMC, unix.SOCK_STREAM}, "mctp": {unix.AF_MCTP, unix.SOCK_DGRAM},
	"xdp": {unix.AF_XDP, unix.SOCK_RAW}, "packet": {unix.AF_PACKET, unix.SOCK_DGRAM},
	"unix": {unix.AF_UNIX, unix.SOCK_STREAM}, "netlink": {unix.AF_NETLINK, unix.SOCK_RAW},
}

func socketOf(name string) error {
	f, ok := families[name]
	if !ok {
		return fmt.Errorf("unknown family %q", name)
	}
	fd, err := unix.Socket(f[0], f[1]|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return sysErr("socket", err)
	}
	return unix.Close(fd)
}

func pid(s string) string {
	if s == "ppid" {
		return strconv.Itoa(os.Getppid())
	}
	return s
}

func openProc(path string, flags int) error {
	fd, err := unix.Open(path, flags|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: path, Err: err}
	}
	return unix.Close(fd)
}
