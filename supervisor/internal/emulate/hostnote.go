package emulate

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/bpf"
	"github.com/nettrap/nettrap/classify"
	"github.com/nettrap/nettrap/procfs"
	"github.com/nettrap/nettrap/supervisor/internal/sockdiag"
)

// maxHostNotes bounds the notes of a run (and the host dumps they cost:
// a test that dials many closed ports asks once per address).
const maxHostNotes = 16

// noteHostListener: in the namespace nettrap made for the command, a TCP
// connect to its loopback that no listener takes may have been meant for
// one on the host's (a CI service container on localhost:5432, which the
// namespace keeps out). nettrap then says so, once per address, with the
// rule that reaches it. The call's outcome stays the kernel's: nothing
// left the namespace, so nothing is denied. r is the emulated connect's
// result; a non-blocking one that was refused is already closed (the
// loopback's reset is taken before connect returns), which TCP_INFO
// tells without taking the error the target will read.
func (s *Borrowed) noteHostListener(c *Call, r Result) {
	if c.Syscall.Kind != bpf.Connect || len(c.Msgs) != 1 || (r.Errno != unix.ECONNREFUSED && r.Errno != unix.EINPROGRESS) {
		return
	}
	d, err := classify.Parse(c.Msgs[0].Name, classify.OpConnect)
	if err != nil || (d.Family != unix.AF_INET && d.Family != unix.AF_INET6) || !d.Addr.Addr().Unmap().IsLoopback() {
		return
	}
	if r.Errno == unix.EINPROGRESS {
		ti, err := unix.GetsockoptTCPInfo(s.FD, unix.IPPROTO_TCP, unix.TCP_INFO)
		if err != nil || ti.State != unix.BPF_TCP_CLOSE {
			return // connecting, or not TCP
		}
	}
	if _, seen := s.e.hostNoted.LoadOrStore(d.Addr, true); seen || s.e.hostNotes.Add(1) > maxHostNotes {
		return
	}
	socks, err := sockdiag.InetReceivers(d.Addr, unix.IPPROTO_TCP) // nettrap's namespace: the host's
	if err != nil || len(socks) == 0 {
		return
	}
	who := "a listener"
	if pid := procfs.SocketHolder(uint64(socks[0].INode)); pid > 0 {
		who = fmt.Sprintf("a listener (pid %d %s)", pid, procfs.Comm(pid))
	}
	fmt.Fprintf(s.e.Notices, "nettrap: connect tcp %s by pid %d was refused in the command's own network namespace (--sealed): %s on the host's %s is outside it; --allow %s reaches it\n",
		d.Addr, c.TID, who, d.Addr, d.Addr)
}
