package emulate

import (
	"encoding/binary"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/bpf"
	"github.com/nettrap/nettrap/supervisor/internal/decode"
	"github.com/nettrap/nettrap/supervisor/internal/targetmem"
)

// smallIov is how many vectors a send may have and be read without an
// allocation (borrowed.small).
const smallIov = 4

// smallIovs is the storage of a send of at most smallIov vectors.
type smallIovs struct {
	iovRaw  [smallIov * sizeofIovec]byte
	iovBufs [smallIov]remoteBuf
	remote  [smallIov]unix.RemoteIovec
	local   [1]unix.Iovec
}

// remoteBuf is one buffer in the target's memory.
type remoteBuf struct{ base, len uint64 }

const sizeofIovec = 16 // struct iovec on 64-bit ABIs

// msgPayload reads a message's iovec array, then its payload. It follows
// the kernel's checks of copy_msghdr_from_user and import_iovec: more
// than UIO_MAXIOV vectors is EMSGSIZE, an unreadable array EFAULT.
func (s *Borrowed) msgPayload(typ int, m decode.RawMsg) ([]byte, unix.Errno) {
	bufs, errno := s.iovecs(m)
	if errno != 0 {
		return nil, errno
	}
	return s.payload(typ, bufs)
}

// iovecs reads a message's iovec array.
func (s *Borrowed) iovecs(m decode.RawMsg) ([]remoteBuf, unix.Errno) {
	if m.Iovlen > decode.UioMaxIOV {
		return nil, unix.EMSGSIZE
	}
	if m.Iovlen == 0 {
		return nil, 0
	}
	var raw []byte
	var bufs []remoteBuf
	if m.Iovlen <= smallIov {
		// Most sends have one or two vectors: the call's own storage.
		raw, bufs = s.small.iovRaw[:m.Iovlen*sizeofIovec], s.small.iovBufs[:m.Iovlen]
	} else {
		raw, bufs = make([]byte, m.Iovlen*sizeofIovec), make([]remoteBuf, m.Iovlen)
	}
	if errno := s.readRemote(m.Iov, raw); errno != 0 {
		return nil, errno
	}
	for i := range bufs {
		bufs[i] = remoteBuf{
			base: binary.NativeEndian.Uint64(raw[i*sizeofIovec:]),
			len:  binary.NativeEndian.Uint64(raw[i*sizeofIovec+8:]),
		}
	}
	return bufs, 0
}

// readRemote fills buf from addr in the target: with process_vm_readv,
// one syscall, or where that is refused through /proc/TID/mem (an open,
// a pread and a close per call, paid by every sendmsg otherwise).
func (s *Borrowed) readRemote(addr uint64, buf []byte) unix.Errno {
	if addr == 0 {
		return unix.EFAULT
	}
	local := []unix.Iovec{{Base: &buf[0]}}
	local[0].SetLen(len(buf))
	n, err := targetmem.ProcessVMReadv(s.call.TID, local, []unix.RemoteIovec{{Base: uintptr(addr), Len: len(buf)}})
	switch {
	case err == unix.EPERM || err == unix.ENOSYS:
		r := targetmem.NewReader(uint32(s.call.TID))
		defer r.Close()
		if r.Read(addr, buf) != nil {
			return unix.EFAULT
		}
		return 0
	case err != nil || n != len(buf):
		return unix.EFAULT
	}
	return 0
}

// skip returns bufs without their first n bytes.
func skip(bufs []remoteBuf, n uint64) []remoteBuf {
	for len(bufs) > 0 && n >= bufs[0].len {
		n -= bufs[0].len
		bufs = bufs[1:]
	}
	if len(bufs) == 0 {
		return nil
	}
	out := append([]remoteBuf{{bufs[0].base + n, bufs[0].len - n}}, bufs[1:]...)
	return out
}

// payload reads the bytes a send would copy from the target. A racing
// change of the payload is the target's own business (it could as well
// have sent other bytes); only the address is a matter of policy.
func (s *Borrowed) payload(typ int, bufs []remoteBuf) ([]byte, unix.Errno) {
	var total uint64
	for _, b := range bufs {
		if int64(b.len) < 0 || total+b.len < total {
			return nil, unix.EINVAL // a negative length, as ssize_t
		}
		total += b.len
	}
	limit := uint64(decode.MaxStreamSend)
	if typ != unix.SOCK_STREAM {
		limit = decode.MaxDatagram
		if s.family == unix.AF_UNIX || s.family == unix.AF_NETLINK {
			limit = decode.MaxLocalDatagram // the kernel's own limit is the send buffer
		}
		if total > limit {
			return nil, unix.EMSGSIZE
		}
	}
	total = min(total, limit)
	out := decode.GetPayloadBuf(int(total), s.call.Syscall.Kind != bpf.SendMMsg)
	local := s.small.local[:0]
	remote := s.small.remote[:0]
	if len(bufs) > smallIov {
		remote = make([]unix.RemoteIovec, 0, len(bufs))
	}
	left := total
	for _, b := range bufs {
		n := min(b.len, left)
		if n == 0 {
			continue
		}
		remote = append(remote, unix.RemoteIovec{Base: uintptr(b.base), Len: int(n)})
		left -= n
	}
	if total == 0 {
		return out, 0
	}
	local = append(local, unix.Iovec{Base: &out[0]})
	local[0].SetLen(int(total))
	n, err := targetmem.ProcessVMReadv(s.call.TID, local, remote)
	if err == unix.EPERM || err == unix.ENOSYS {
		return s.payloadByMem(out, remote)
	}
	if err != nil || uint64(n) != total {
		return nil, unix.EFAULT
	}
	return out, 0
}

// payloadByMem is payload through /proc/TID/mem, where process_vm_readv
// is refused.
func (s *Borrowed) payloadByMem(out []byte, remote []unix.RemoteIovec) ([]byte, unix.Errno) {
	r := targetmem.NewReader(uint32(s.call.TID))
	defer r.Close()
	off := 0
	for _, b := range remote {
		if r.Read(uint64(b.Base), out[off:off+b.Len]) != nil {
			return nil, unix.EFAULT
		}
		off += b.Len
	}
	return out, 0
}
