// Package bench measures what confinement costs per operation: the same
// workload run bare, under a floor supervisor (supervisor.Start with a
// decider that allows everything: it still receives each notification and
// reads the sockaddr from the target, so it is the mechanism's floor) and
// under the real nettrap binary, in the same `go test -bench` run.
//
// The operations, each timed inside the workload process after a warm-up:
//
//	getppid     (a) a syscall the filter never hands to user space
//	tcpconnect  (b) loopback TCP socket + connect + close
//	udpsendto   (c) sendto on an unconnected UDP socket to a loopback peer
//	udpsend     (d) send (sendto with a NULL address) on a connected socket
//	setsockopt  (e) three ordinary setsockopt calls (TCP_NODELAY,
//	                SO_REUSEADDR, IP_TOS): decided in the filter by level and
//	                optname, never handed up
//
// Every address is 127.0.0.1. The filter is never installed in the test
// process: floor and nettrap are separate binaries, built once per run,
// and each confine their own child.
//
// Each leaf BenchmarkOps/OP/RUNNER runs the workload once with N = b.N
// and reports the workload's own ns/op, so process and supervisor start-up
// stay out of the figure. Metrics besides ns/op:
//
//	x-bare          this runner's ns/op over bare's, bare measured just before
//	added-vs-floor  (nettrap - bare) / (floor - bare), on the nettrap leaf
//	rss-KiB         the workload's peak RSS (VmHWM)
//	sup-rss-KiB     the supervisor's peak RSS, read by the workload at its end
//
// Targets (from the issue): (a), (d) and (e) at ×1.00 within noise, since
// nothing there is trapped; (b) and (c) at added-vs-floor ≤ 1.25.
//
// run.sh runs the benchmarks several times, interleaving the runners, and
// prints benchstat's summary and a Markdown table of the ratios. Nothing
// here runs without -bench; speed is never asserted by a test.
package bench
