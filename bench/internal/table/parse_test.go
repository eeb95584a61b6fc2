package main

import (
	"strings"
	"testing"
)

const sample = `goos: linux
BenchmarkOps/getppid/bare-2    	    2000	      2409 ns/op	      4520 rss-KiB
BenchmarkOps/getppid/nettrap-2 	    2000	      2500 ns/op	      4488 rss-KiB	      6276 sup-rss-KiB	         1.04 x-bare	         1.02 x-ref
BenchmarkOps/udpsendto/bare-2  	    2000	      1000 ns/op	      4000 rss-KiB
BenchmarkOps/udpsendto/cfloor-emu-2 	    2000	      3000 ns/op	      4000 rss-KiB	      3000 sup-rss-KiB	         3 x-bare
BenchmarkOps/udpsendto/nettrap-2	    2000	      3200 ns/op	         1.1 added-vs-ref	      4000 rss-KiB	      6000 sup-rss-KiB	         3.2 x-bare	         1.067 x-ref
BenchmarkOps/udpsendto/bare-2  	    2000	      1200 ns/op	      4100 rss-KiB
BenchmarkOps/udpsendto/ptrace-2	    2000	      9000 ns/op	      4000 rss-KiB	      7000 sup-rss-KiB	         7.5 x-bare
BenchmarkOther-2 100 5 ns/op
PASS
`

func TestParse(t *testing.T) {
	s := parse(sample)
	tests := []struct {
		op, runner, unit string
		want             []float64
	}{
		{"getppid", "bare", "ns/op", []float64{2409}},
		{"getppid", "nettrap", "x-bare", []float64{1.04}},
		{"udpsendto", "bare", "ns/op", []float64{1000, 1200}},
		{"udpsendto", "nettrap", "added-vs-ref", []float64{1.1}},
		{"udpsendto", "cfloor-emu", "sup-rss-KiB", []float64{3000}},
		{"udpsendto", "nettrap", "ns/op", []float64{3200}},
	}
	for _, tt := range tests {
		got := s.get(tt.op, tt.runner, tt.unit)
		if len(got) != len(tt.want) {
			t.Errorf("%s/%s %s = %v, want %v", tt.op, tt.runner, tt.unit, got, tt.want)
			continue
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Errorf("%s/%s %s = %v, want %v", tt.op, tt.runner, tt.unit, got, tt.want)
			}
		}
	}
	if got := s.get("Other", "", "ns/op"); got != nil {
		t.Errorf("non-BenchmarkOps line parsed: %v", got)
	}
	if n := s.runs(); n != 2 {
		t.Errorf("runs = %d, want 2", n)
	}
}

func TestMedian(t *testing.T) {
	for _, tt := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := median(tt.in); got != tt.want {
			t.Errorf("median(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestRender(t *testing.T) {
	out := render(parse(sample), "test machine")
	for _, want := range []string{
		"Machine: test machine. Medians of 2 interleaved runs",
		"| (a) untrapped syscall (getppid) | 2409 | – | 2500 | 1.04 | ×1.02 |",
		"| (c) unconnected loopback UDP sendto | 1100 | 3000 | 3200 | 3.20 | 1.10 |",
		"| workload, bare | 4100 | 1.00 |",
		"| nettrap supervisor process | 6138 | 1.50 |",
		// An engine against another: the reference's name in the header.
		"| operation | bare ns/op | notify engine ns/op | ptrace ns/op | ptrace × bare | added / notify engine's added, or × notify engine |",
		"| (c) unconnected loopback UDP sendto | 1100 | 3200 | 9000 | 7.50 | – |",
		"| ptrace supervisor process | 7000 | 1.71 |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("render output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "nettrap --emulate=off (allowed calls") {
		t.Errorf("render shows a comparison with no samples:\n%s", out)
	}
	if strings.Contains(out, "(b)") {
		t.Errorf("render shows an op with no samples:\n%s", out)
	}
}

func TestRenderPing(t *testing.T) {
	const pings = `BenchmarkOps/udpping/bare-2 	 2000	 30000 ns/op	 4000 rss-KiB	 16000 ping-ns	 12000 after-answer-ns	 4000 after-arrival-ns	 0.05 answer-first	 1 ping-x-bare	 0.75 after-answer-x-bare-ping	 0.25 after-arrival-x-bare-ping
BenchmarkOps/udpping/nettrap-2 	 2000	 80000 ns/op	 4000 rss-KiB	 11000 sup-rss-KiB	 2.6 x-bare	 40000 ping-ns	 -16000 after-answer-ns	 -24000 after-arrival-ns	 0.8 answer-first	 2.5 ping-x-bare	 -1 after-answer-x-bare-ping	 -1.5 after-arrival-x-bare-ping
`
	out := render(parse(pings), "test machine")
	for _, want := range []string{
		"| runner | round trip from before the send, ns |",
		"| bare | 16000 | 1.00 | 0.75 | 0.25 | 0.05 |",
		"| nettrap | 40000 | 2.50 | -1.00 | -1.50 | 0.80 |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("render output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(render(parse(sample), "test machine"), "udpping") {
		t.Error("render shows the udpping table with no udpping samples")
	}
}
