// Package bench measures what confinement costs per operation: the same
// workload run bare, under a minimal C supervisor (the floor, issue 10)
// and under the real nettrap binary, alternating, in the same
// `go test -bench` run.
//
// The C floor (internal/cfloor/cfloor.c, built with the system C compiler
// at bench time; without one its runners skip, and fail under CI=true)
// blocks in SECCOMP_IOCTL_NOTIF_RECV with SYNC_WAKE_UP set, reads the
// sockaddr with process_vm_readv, checks ID_VALID and answers CONTINUE;
// with -e it emulates the call as nettrap does by default (pidfd_getfd of
// the socket with the thread's pidfd cached, the payload read with
// process_vm_readv, the call made by the supervisor, close). Its filter
// traps what nettrap's traps on these paths (connect, sendto with an
// address, sendmsg, sendmmsg) and nothing else.
//
// The operations, each timed inside the workload process after a warm-up:
//
//	getppid     (a) a syscall the filter never hands to user space
//	tcpconnect  (b) loopback TCP socket + connect + accept + close
//	udpsendto   (c) sendto on an unconnected UDP socket to a loopback peer
//	udpsend     (d) send (sendto with a NULL address) on a connected socket
//	setsockopt  (e) three ordinary setsockopt calls (TCP_NODELAY,
//	                SO_REUSEADDR, IP_TOS): decided in the filter by level and
//	                optname, never handed up
//	udpgso      (f) quic-go's send: sendmsg on an unconnected UDP socket,
//	                4 × 1252 bytes split by GSO (UDP_SEGMENT), with an
//	                IP_TOS (ECN) control message
//
// and, when NETTRAP_BENCH_OPS names them, issue 19's unixconnect,
// unixsendto and pinopt, and issue 37's
//
//	udpping     a UDP ping in Go's net package: an unconnected socket's
//	            WriteToUDP (trapped) to a loopback peer whose goroutine
//	            answers, the answer read by the sender's reader goroutine;
//	            besides its time, when the answer and the datagram's
//	            arrival came against the send's return
//
// Every address is 127.0.0.1. The filter is never installed in the test
// process: the supervisors are separate binaries, built once per run,
// and each confine their own child.
//
// The runners (runners_test.go; NETTRAP_BENCH_RUNNERS picks others, "all"
// runs every one): bare, cfloor, continue (nettrap --emulate=off),
// cfloor-emu, nettrap, ptrace (NETTRAP_ENGINE=ptrace, weighed against
// nettrap, the notify engine: both emulate allowed calls), ptrace-parent
// (nettrap under cfloor -w, a listener above that traps bind and listen as
// WSL2's init does: auto falls back to the ptrace engine, whose probe sees
// the listener hide none of its calls, so only they stop; weighed against
// ptrace), ptrace-parent-entry (the same with every syscall stopped at
// entry, NETTRAP_TEST_ENTRY_STOPS, as under --sealed or a listener that
// hides nettrap's calls; weighed against ptrace-parent); and on demand
// cfloor-emu-nosync, nettrap-nosync (NETTRAP_TEST_NO_SYNC_WAKEUP withholds
// the flag, as kernels before 6.6 lack it), nettrap-pre519 (also
// NETTRAP_TEST_NO_KILLABLE_RECV: neither flag, as before 5.19),
// cfloor-emu-nosync-spin and nettrap-nosync-spin (a 50 µs bounded spin
// before blocking; nettrap's NETTRAP_TEST_RECV_SPIN_US), floor (the Go
// floor sharing nettrap's loop), gofloor-emu and gofloor-emu-nosync
// (internal/gofloor: cfloor -e written in Go, the same syscalls per call
// and none of nettrap's code; weighed against cfloor-emu and
// cfloor-emu-nosync, they are the share of the Go runtime alone), kernel
// (internal/kfloor, the kernel floor of issue 39: cgroup BPF programs pass
// loopback in the kernel and the command runs under nettrap's filter with
// every trap an allow, so nothing goes to user space; root only; weighed
// against nettrap), kernel-egress (the same with kfloor's egress
// backstop; weighed against kernel) and kernel-hold (the hold's programs,
// kfloor -hold; weighed against kernel).
//
// Each leaf BenchmarkOps/OP/RUNNER runs the workload once with N = b.N
// and reports the workload's own ns/op, so process and supervisor start-up
// stay out of the figure. Metrics besides ns/op:
//
//	x-bare        this runner's ns/op over bare's, bare measured just before
//	x-ref         over its reference's (nettrap: cfloor-emu; continue: cfloor;
//	              ptrace: nettrap; ptrace-parent: ptrace;
//	              ptrace-parent-entry: ptrace-parent)
//	added-vs-ref  (runner - bare) / (reference - bare), trapped ops only
//	rss-KiB       the workload's peak RSS (VmHWM)
//	sup-rss-KiB   the supervisor's peak RSS, read by the workload at its end
//	sup-cpu-ns/op the supervisor's CPU time per op (every thread; its process
//	              clock, read by the workload around the timed loop)
//	cpu-added-vs-ref  added-vs-ref on CPU time (the workload's plus its
//	              supervisor's): less swayed by other work on the machine
//
// and for udpping (medians over the timed loop): ping-ns, the round trip
// from before the send to the answer; after-answer-ns and
// after-arrival-ns, from the send's return to the answer and to the
// peer's read of the datagram (negative: before the send returned);
// answer-first, the share of answers read no later than the send
// returned; ping-x-bare, after-answer-x-bare-ping and
// after-arrival-x-bare-ping, the same over bare's round trip measured
// just before.
//
// Goals (issue 10), against the C floors: trapped ops at added-vs-ref ≤
// 1.25; the others at x-ref ≤ 1.05. The ptrace runners have none: their
// figures are what the fallback costs.
//
// run.sh runs the benchmarks several times, interleaving the runners, and
// prints benchstat's summary and Markdown tables of the ratios. quicgo.sh
// runs quic-go's integrationtests/self bare, under the C floor, under
// nettrap and (as root) under the kernel floor. pingruns.sh runs a
// timing-sensitive ping test 80 times under each and counts its failures
// (issue 39: its start time taken after an unconnected send, it fails
// when the answer came no later).
// syscount.sh counts the syscalls nettrap's own process makes per trapped
// call (an allowed loopback connect, an emulated UDP sendto, a denied
// connect; strace -c attached to nettrap while internal/workload (count) makes
// the calls, in a private network namespace), for nettrap binaries or git
// revisions side by side: `bench/syscount.sh [-n N] [-e notify,ptrace]
// BASE-REV HEAD` as root says whether a change to the supervisor left its
// calls as they were. Nothing here runs without -bench; speed is never
// asserted by a test.
package bench
