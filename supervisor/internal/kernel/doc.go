// Package kernel is the kernel engine's half in the kernel (issue 39):
// the confined command starts in a cgroup of its own whose BPF programs
// (package cgroupbpf) pass a connect or send to loopback on the kernel's
// own copy of the destination, at the kernel's own cost, and hold every
// other for nettrap's decider. The seccomp filter then leaves the native
// sends to the kernel (bpf.Options.KernelSends); the notify engine still
// decides every other trapped call, connect among them, and makes the
// allowed ones itself (its calls, made in nettrap's own process, pass
// the programs).
//
// A held call is decided as the notify engine decides one: a
// decision.Call with one destination, whose Task reads the caller's
// stack and goroutine chain from the registers the program reported
// (the thread is in its call, looping in the kernel, while it waits).
// The verdict goes back through the programs' map, bound to the
// destination and the socket it was given for.
//
// The programs are attached to the cgroup itself (BPF_PROG_ATTACH), not
// through links: they stay for as long as the cgroup has a process,
// whatever becomes of nettrap, and a call held when no one answers
// fails closed at the deadline. The tree sees the cgroup file system
// only from its own cgroup down (mounts.go): it cannot move itself out.
package kernel
