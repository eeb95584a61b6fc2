package bpf

import (
	"fmt"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// TestExecOption: with Options.Exec the native execve and execveat go to
// the supervisor; without it, and through the 32-bit ABIs, they run.
func TestExecOption(t *testing.T) {
	cases := []struct {
		goarch string
		arch   uint32
		nrs    []int32
	}{
		{"amd64", unix.AUDIT_ARCH_X86_64, []int32{59, 322}},
		{"arm64", unix.AUDIT_ARCH_AARCH64, []int32{221, 281}},
	}
	for _, c := range cases {
		plain := vmFor(t, c.goarch)
		prog, err := ProgramWith(c.goarch, Options{Exec: true})
		if err != nil {
			t.Fatalf("ProgramWith(%q): %v", c.goarch, err)
		}
		withExec, err := bpf.NewVM(prog)
		if err != nil {
			t.Fatal(err)
		}
		for _, nr := range c.nrs {
			d := seccompData{nr: nr, arch: c.arch}
			if r := run(t, withExec, d); r != retNotify {
				t.Errorf("%s nr %d with Exec: %s, want USER_NOTIF", c.goarch, nr, retName(r))
			}
			if r := run(t, plain, d); r != retAllow {
				t.Errorf("%s nr %d without Exec: %s, want ALLOW", c.goarch, nr, retName(r))
			}
			if k := Lookup(c.arch, nr).Kind; k != Execve && k != Execveat {
				t.Errorf("Lookup(%s, %d) = %v, want an exec kind", c.goarch, nr, k)
			}
		}
		// Everything the plain filter traps, the exec filter traps too.
		if r := run(t, withExec, seccompData{nr: int32(targets[c.goarch].native.nrOf(Connect)), arch: c.arch}); r != retNotify {
			t.Errorf("%s connect with Exec: %s, want USER_NOTIF", c.goarch, retName(r))
		}
	}
	// i386 execve (11) is not trapped: see Options.Exec.
	prog, _ := ProgramWith("amd64", Options{Exec: true})
	vm, _ := bpf.NewVM(prog)
	if r := run(t, vm, seccompData{nr: 11, arch: unix.AUDIT_ARCH_I386}); r != retAllow {
		t.Errorf("i386 execve with Exec: %s, want ALLOW", retName(r))
	}
}

// TestKernelSendsOption: with Options.KernelSends the native sendto,
// sendmsg and sendmmsg run (the kernel engine's programs decide them);
// everything else the plain filter traps it traps still, connect among
// them unless KernelConnects, and the 32-bit ABIs' sends and connects
// still go to the supervisor.
func TestKernelSendsOption(t *testing.T) {
	for _, connects := range []bool{false, true} {
		t.Run(fmt.Sprintf("connects=%v", connects), func(t *testing.T) { testKernelSends(t, connects) })
	}
}

func testKernelSends(t *testing.T, connects bool) {
	for _, c := range []struct {
		goarch string
		arch   uint32
	}{{"amd64", unix.AUDIT_ARCH_X86_64}, {"arm64", unix.AUDIT_ARCH_AARCH64}} {
		plain := vmFor(t, c.goarch)
		prog, err := ProgramWith(c.goarch, Options{KernelSends: true, KernelConnects: connects})
		if err != nil {
			t.Fatalf("ProgramWith(%q): %v", c.goarch, err)
		}
		vm, err := bpf.NewVM(prog)
		if err != nil {
			t.Fatal(err)
		}
		native := targets[c.goarch].native
		for _, tr := range native.traps {
			d := seccompData{nr: int32(tr.nr), arch: c.arch}
			d.args[4], d.args[5] = 0x7f0000001000, 16 // an inet address
			want := run(t, plain, d)
			if tr.kind == SendTo || tr.kind == SendMsg || tr.kind == SendMMsg || (connects && tr.kind == Connect) {
				want = retAllow
			}
			if tr.kind == Connect && want != retAllow && want != retNotify {
				t.Errorf("%s connect with KernelConnects=%v: %s", c.goarch, connects, retName(want))
			}
			if tr.kind == SendTo {
				// A netlink address's length goes up, whatever the
				// high half of the register says.
				nl := d
				nl.args[5] = 0xdead00000000 | unix.SizeofSockaddrNetlink
				if got := run(t, vm, nl); got != retNotify {
					t.Errorf("%s sendto with a sockaddr_nl's length: %s, want USER_NOTIF", c.goarch, retName(got))
				}
			}
			if got := run(t, vm, d); got != want {
				t.Errorf("%s %v (nr %d) with KernelSends: %s, want %s", c.goarch, tr.kind, tr.nr, retName(got), retName(want))
			}
		}
		compat := targets[c.goarch].compat
		for _, tr := range compat.traps {
			if tr.kind != SendTo && tr.kind != SendMsg && tr.kind != SendMMsg && tr.kind != Connect {
				continue
			}
			if r := run(t, vm, seccompData{nr: int32(tr.nr), arch: compat.audit}); r != retNotify {
				t.Errorf("%s compat %v with KernelSends: %s, want USER_NOTIF", c.goarch, tr.kind, retName(r))
			}
		}
	}
}
