package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/nettrap/nettrap/bench/internal/wire"
)

// ops are the workload's operations, in the order (a)–(f).
var ops = []string{"getppid", "tcpconnect", "udpsendto", "udpsend", "setsockopt", "udpgso"}

// moreOps are measured only when NETTRAP_BENCH_OPS names them (issue
// 19's calls, which nettrap now makes itself: bench/compare.sh weighs
// them against a nettrap built from an earlier commit; issue 37's
// udpping, a UDP ping whose send is trapped, timed around its answer).
var moreOps = []string{"unixconnect", "unixsendto", "pinopt", "udpping"}

// opsEnv names the ops to run (comma-separated); empty: ops.
const opsEnv = "NETTRAP_BENCH_OPS"

// trapped are the ops whose calls go to the supervisor; added cost vs
// the reference only means something for them.
var trapped = map[string]bool{"tcpconnect": true, "udpsendto": true, "udpgso": true,
	"unixconnect": true, "unixsendto": true, "pinopt": true, "udpping": true}

// selectOps returns the ops spec names, in ops' then moreOps' order.
func selectOps(spec string) ([]string, error) {
	if spec == "" {
		return ops, nil
	}
	want := map[string]bool{}
	for _, n := range strings.Split(spec, ",") {
		want[strings.TrimSpace(n)] = true
	}
	var sel []string
	for _, op := range append(append([]string{}, ops...), moreOps...) {
		if want[op] {
			sel = append(sel, op)
			delete(want, op)
		}
	}
	if len(want) > 0 {
		return nil, fmt.Errorf("%s: unknown ops %v", opsEnv, keys(want))
	}
	return sel, nil
}

const (
	workloadPkg = "github.com/nettrap/nettrap/bench/internal/workload"
	floorPkg    = "github.com/nettrap/nettrap/bench/internal/floor"
	goFloorPkg  = "github.com/nettrap/nettrap/bench/internal/gofloor"
	nettrapPkg  = "github.com/nettrap/nettrap/cmd/nettrap"
	kfloorPkg   = "github.com/nettrap/nettrap/bench/internal/kfloor"
)

// exitCantRun is the status nettrap and floor give when they cannot
// confine at all (no seccomp user notification here).
const exitCantRun = 125

// result is what the workload prints (one JSON line).
type result = wire.Result

func BenchmarkOps(b *testing.B) {
	bins := binaries(b)
	rs, err := selectRunners(os.Getenv(runnersEnv))
	if err != nil {
		b.Fatal(err)
	}
	sel, err := selectOps(os.Getenv(opsEnv))
	if err != nil {
		b.Fatal(err)
	}
	for _, op := range sel {
		b.Run(op, func(b *testing.B) {
			last := map[string]result{}
			for _, r := range rs {
				b.Run(r.name, func(b *testing.B) {
					res := runWorkload(b, bins, r, op, b.N)
					last[r.name] = res
					report(b, op, r, res, last)
				})
			}
		})
	}
}

// report adds the ratios: x-bare; x-ref, this runner over its reference
// (the C floor it is weighed against, measured just before); and for
// trapped ops added-vs-ref, (this - bare) / (ref - bare). The same from
// CPU time (the workload's and its supervisor's, per op), which other work
// on a shared machine sways less than the wall time: sup-cpu-ns/op, and
// cpu-added-vs-ref, (this one's CPU - bare's) / (ref's - bare's).
func report(b *testing.B, op string, r runner, res result, last map[string]result) {
	b.ReportMetric(res.NsPerOp, "ns/op")
	b.ReportMetric(float64(res.SelfHWM), "rss-KiB")
	if r.name == "bare" {
		reportPing(b, res, res)
		return
	}
	b.ReportMetric(float64(res.ParentHWM), "sup-rss-KiB")
	if res.ParentCPU > 0 {
		b.ReportMetric(res.ParentCPU, "sup-cpu-ns/op")
	}
	bare, ok := last["bare"]
	if !ok || bare.NsPerOp <= 0 {
		return
	}
	b.ReportMetric(res.NsPerOp/bare.NsPerOp, "x-bare")
	reportPing(b, res, bare)
	ref, ok := last[r.ref]
	if !ok || ref.NsPerOp <= 0 {
		return
	}
	b.ReportMetric(res.NsPerOp/ref.NsPerOp, "x-ref")
	if !trapped[op] {
		return
	}
	if ref.NsPerOp > bare.NsPerOp {
		b.ReportMetric((res.NsPerOp-bare.NsPerOp)/(ref.NsPerOp-bare.NsPerOp), "added-vs-ref")
	}
	cpu := func(x result) float64 { return x.SelfCPU + x.ParentCPU }
	if res.ParentCPU > 0 && ref.ParentCPU > 0 && cpu(ref) > bare.SelfCPU {
		b.ReportMetric((cpu(res)-bare.SelfCPU)/(cpu(ref)-bare.SelfCPU), "cpu-added-vs-ref")
	}
}

// reportPing adds the udpping op's figures (wire.Ping): the round trip
// from before the send to the answer (ping-ns) and its ratio to bare's,
// measured just before (ping-x-bare); from the send's return to the
// answer and to the datagram's arrival at the peer, as a share of bare's
// round trip (after-answer-x-bare-ping, after-arrival-x-bare-ping:
// negative when the answer, or the datagram, came before the send
// returned); and the share of pings whose answer came no later than the
// send returned (answer-first).
func reportPing(b *testing.B, res, bare result) {
	p := res.Ping
	if p == nil {
		return
	}
	b.ReportMetric(p.BeforeSendToAnswer, "ping-ns")
	b.ReportMetric(p.AfterSendToAnswer, "after-answer-ns")
	b.ReportMetric(p.AfterSendToArrival, "after-arrival-ns")
	b.ReportMetric(p.AnswerFirst, "answer-first")
	if bare.Ping == nil || bare.Ping.BeforeSendToAnswer <= 0 {
		return
	}
	rtt := bare.Ping.BeforeSendToAnswer
	b.ReportMetric(p.BeforeSendToAnswer/rtt, "ping-x-bare")
	b.ReportMetric(p.AfterSendToAnswer/rtt, "after-answer-x-bare-ping")
	b.ReportMetric(p.AfterSendToArrival/rtt, "after-arrival-x-bare-ping")
}

// runWorkload runs the workload for n operations under runner and returns
// what it measured.
func runWorkload(b *testing.B, bins *builds, r runner, op string, n int) result {
	b.Helper()
	if r.base && bins.base == "" {
		b.Fatalf("runner %s needs %s (a nettrap binary of the commit to weigh against; see bench/compare.sh)", r.name, baseBinEnv)
	}
	if r.cfloor && bins.cfloor == "" {
		skipOrFail(b, bins.cfloorErr)
	}
	var args []string
	if r.cmd != nil {
		args = r.cmd(bins)
	}
	args = append(args, bins.workload, op, strconv.Itoa(n))
	runner := r.name
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(cleanEnv(), r.env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		if cmd.ProcessState != nil && cmd.ProcessState.ExitCode() == exitCantRun && runner != "bare" {
			skipOrFail(b, fmt.Sprintf("%s cannot confine here: %s", runner, strings.TrimSpace(stderr.String())))
		}
		b.Fatalf("%s %s: %v\n%s", runner, op, err, stderr.String())
	}
	var res result
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		b.Fatalf("%s %s: bad workload output %q: %v\n%s", runner, op, stdout.String(), err, stderr.String())
	}
	if res.N != n || res.NsPerOp <= 0 {
		b.Fatalf("%s %s: workload ran %d ops in %v ns/op, want %d", runner, op, res.N, res.NsPerOp, n)
	}
	return res
}

// cleanEnv keeps the caller's NETTRAP_* settings away from the measured
// nettrap, which must run with its defaults.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "NETTRAP_") {
			env = append(env, kv)
		}
	}
	return env
}

func skipOrFail(b *testing.B, reason string) {
	b.Helper()
	if os.Getenv("CI") == "true" {
		b.Fatal(reason)
	}
	b.Skip(reason)
}

// builds are the binaries the benchmarks run, built once per test binary.
type builds struct {
	workload, floor, nettrap string
	gofloor                  string // cfloor -e written in Go
	kfloor                   string // the kernel floor
	// cfloor is the C floor, "" when it could not be built (cfloorErr
	// says why: no C compiler).
	cfloor, cfloorErr string
	base              string // NETTRAP_BENCH_BASE_BIN, for nettrap-base
}

var (
	buildOnce sync.Once
	built     *builds
	buildDir  string
	buildErr  error
)

func binaries(b *testing.B) *builds {
	b.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "nettrap-bench-")
		if buildErr != nil {
			return
		}
		bs := &builds{}
		for _, p := range []struct {
			dst *string
			pkg string
		}{{&bs.workload, workloadPkg}, {&bs.floor, floorPkg}, {&bs.gofloor, goFloorPkg}, {&bs.nettrap, nettrapPkg}, {&bs.kfloor, kfloorPkg}} {
			*p.dst = filepath.Join(buildDir, filepath.Base(p.pkg))
			out, err := exec.Command("go", "build", "-o", *p.dst, p.pkg).CombinedOutput()
			if err != nil {
				buildErr = fmt.Errorf("go build %s: %w\n%s", p.pkg, err, out)
				return
			}
		}
		bs.cfloor, bs.cfloorErr, buildErr = buildCFloor(buildDir)
		bs.base = os.Getenv(baseBinEnv)
		built = bs
	})
	if buildErr != nil {
		b.Fatal(buildErr)
	}
	return built
}

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}
