// Package cgroupbpf holds the cgroup BPF programs that decide a
// confined tree's connects and sends in the kernel (issue 39): the hold,
// whose sock_addr programs pass loopback on the kernel's own copy of the
// destination and keep every other call waiting for user space's verdict
// (hold.go, holdprog.go), the egress backstop, which drops what no
// address program sees (egress.go), and the cgroup a command starts in.
//
// The programs are written with cilium/ebpf's asm package: they are
// data, built at run time, with no compiler. The kernel engine
// (supervisor/internal/kernel) and the kernel floor of the benchmarks
// (bench/internal/kfloor) use them.
package cgroupbpf
