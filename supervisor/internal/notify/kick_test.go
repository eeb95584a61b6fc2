package notify

import (
	"runtime"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/nettrap/nettrap/bpf"
)

// The receivers block in RECV only where the filter traps the call that
// wakes them: nettrap's own program must, a program that traps nothing
// must not (the loop then polls), nor one that kills or rejects it.
func TestKickable(t *testing.T) {
	prog, err := bpf.Assemble(runtime.GOARCH)
	if err != nil {
		t.Skipf("no program for %s: %v", runtime.GOARCH, err)
	}
	if !Kickable(prog) {
		t.Error("nettrap's program does not trap the kick: the receivers could never be stopped")
	}
	ret := func(action uint32) []unix.SockFilter {
		return []unix.SockFilter{{Code: unix.BPF_RET | unix.BPF_K, K: action}}
	}
	for _, tt := range []struct {
		name string
		prog []unix.SockFilter
		want bool
	}{
		{"notify everything", ret(unix.SECCOMP_RET_USER_NOTIF), true},
		{"allow everything", ret(unix.SECCOMP_RET_ALLOW), false},
		{"trace everything", ret(unix.SECCOMP_RET_TRACE), false},
		{"EPERM everything", ret(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)), false},
		{"not a program", []unix.SockFilter{{Code: 0xffff}}, false},
	} {
		if got := Kickable(tt.prog); got != tt.want {
			t.Errorf("%s: kickable = %v, want %v", tt.name, got, tt.want)
		}
	}
}
