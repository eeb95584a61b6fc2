// Command kfloor is the kernel floor: what a supervisor that decides
// loopback in the kernel would cost, measured for issue 39. It runs a
// command in a cgroup of its own (cgroup v2) whose cgroup BPF sock_addr
// programs (connect4, connect6, sendmsg4, sendmsg6) pass a loopback or
// unspecified destination and refuse every other with EPERM, counting
// both, on the kernel's own copy of the address: no call goes to user
// space.
//
//	kfloor [-f] [-e] [-hold] [-counts] -- COMMAND [ARG...]
//
// With -f the command runs under nettrap's own seccomp program with every
// trap turned into an allow (so each call pays the filter's dispatch as it
// would if the kernel decided those calls, and nothing more); -e adds the
// kernel engine's egress backstop; -hold runs the kernel engine's hold
// programs instead, and refuses what they hold; with -counts kfloor
// prints "kfloor: allowed N denied M" on stderr when the command exits. It needs root in the initial user namespace (CAP_BPF and
// CAP_NET_ADMIN there), cgroup v2 and clone3's CLONE_INTO_CGROUP (5.7);
// where it cannot confine it exits 125 saying why, as nettrap does.
//
// It is a measuring stick, the least an engine that decides loopback in
// the kernel can cost, and the test bed of the hold's programs (package
// cgroupbpf), which nettrap's kernel engine runs: docs/engines.md says
// what was measured, docs/performance.md gives the figures.
package main
