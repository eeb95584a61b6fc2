package main

import (
	"encoding/binary"

	"golang.org/x/sys/unix"
)

const (
	maxPayload = 65536
	maxIov     = 64
	maxCtl     = 4096
	sizeofSS   = 128 // struct sockaddr_storage
	sizeofHdr  = 56  // struct msghdr
	sizeofIov  = 16  // struct iovec
)

// receiver is the one receiver's state, reused call after call.
type receiver struct {
	listener int
	n        notif
	resp     resp
	pidfds   map[uint32]int // thread → its pidfd
	ss       [sizeofSS]byte
	hdr      [sizeofHdr]byte
	iovs     [maxIov * sizeofIov]byte
	riov     [maxIov]unix.RemoteIovec
	payload  [maxPayload]byte
	ctl      [maxCtl]byte
}

// handle answers r.n as cfloor's handle does: val and errno, or cont
// (let it continue), or gone (it vanished: no answer).
func (r *receiver) handle() (val int64, errno unix.Errno, cont, gone bool) {
	a := r.n.Args
	var name, payload, control []byte
	ok := true
	switch r.n.Nr {
	case unix.SYS_CONNECT, unix.SYS_SENDTO:
		i := 1
		if r.n.Nr == unix.SYS_SENDTO {
			i = 4
		}
		if a[i+1] > sizeofSS {
			ok = false
			break
		}
		name = r.ss[:a[i+1]]
		ok = r.read(name, a[i])
		if ok && r.n.Nr == unix.SYS_SENDTO {
			payload = r.payload[:min(a[2], maxPayload)]
			ok = r.read(payload, a[1])
		}
	case unix.SYS_SENDMSG:
		name, payload, control, ok = r.readMsg(a[1])
	}
	if !r.idValid() {
		return 0, 0, false, true
	}
	if !ok {
		return 0, unix.EFAULT, false, false
	}
	if r.n.Nr == unix.SYS_SENDMMSG {
		return 0, 0, true, false
	}
	fd, e := r.borrow(int(int32(a[0])))
	if e != 0 {
		return 0, unix.EBADF, false, false
	}
	defer unix.Close(fd)
	switch r.n.Nr {
	case unix.SYS_CONNECT:
		val, errno = r.connect(fd, name)
	case unix.SYS_SENDTO:
		val, errno = r.sendto(fd, payload, name, int(a[3]))
	default:
		val, errno = r.sendmsgOf(fd, name, payload, control, int(a[2]))
	}
	return val, errno, false, false
}

// readMsg reads a sendmsg's header, name, control data and payload.
func (r *receiver) readMsg(addr uint64) (name, payload, control []byte, ok bool) {
	if !r.read(r.hdr[:], addr) {
		return nil, nil, nil, false
	}
	ne := binary.NativeEndian
	nameAt, nameLen := ne.Uint64(r.hdr[0:]), uint64(ne.Uint32(r.hdr[8:]))
	iovAt, iovLen := ne.Uint64(r.hdr[16:]), ne.Uint64(r.hdr[24:])
	ctlAt, ctlLen := ne.Uint64(r.hdr[32:]), ne.Uint64(r.hdr[40:])
	if nameAt != 0 && nameLen > 0 {
		name = r.ss[:min(nameLen, sizeofSS)]
		if !r.read(name, nameAt) {
			return nil, nil, nil, false
		}
	}
	niov := int(min(iovLen, maxIov))
	control = r.ctl[:min(ctlLen, maxCtl)]
	if !r.read(r.iovs[:niov*sizeofIov], iovAt) || !r.read(control, ctlAt) {
		return nil, nil, nil, false
	}
	total := 0
	for k := range niov {
		r.riov[k] = unix.RemoteIovec{Base: uintptr(ne.Uint64(r.iovs[k*sizeofIov:])), Len: int(ne.Uint64(r.iovs[k*sizeofIov+8:]))}
		total += r.riov[k].Len
	}
	total = min(total, maxPayload)
	if niov > 0 && !r.readv(r.riov[:niov], total) {
		return nil, nil, nil, false
	}
	return name, r.payload[:total], control, true
}

// borrow copies the caller's descriptor fd with pidfd_getfd, through
// the thread's pidfd (opened once, and checked with ID_VALID then).
func (r *receiver) borrow(fd int) (int, unix.Errno) {
	tid := r.n.PID
	pidfd, ok := r.pidfds[tid]
	if !ok {
		p, err := unix.PidfdOpen(int(tid), unix.PIDFD_THREAD)
		if err != nil || !r.idValid() {
			if err == nil {
				unix.Close(p)
			}
			return -1, unix.ESRCH
		}
		pidfd, r.pidfds[tid] = p, p
	}
	nfd, e := r.pidfdGetfd(pidfd, fd)
	if e != 0 {
		unix.Close(pidfd)
		delete(r.pidfds, tid)
	}
	return nfd, e
}
