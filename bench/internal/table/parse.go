package main

import (
	"slices"
	"strconv"
	"strings"
)

// samples holds every value seen, by op, runner and unit.
type samples map[[3]string][]float64

// parse reads lines like
//
//	BenchmarkOps/udpsendto/nettrap-2   5000   41234 ns/op   1.10 added-vs-floor   4500 rss-KiB
//
// and ignores everything else.
func parse(text string) samples {
	s := samples{}
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) < 4 || !strings.HasPrefix(f[0], "BenchmarkOps/") {
			continue
		}
		parts := strings.Split(strings.TrimPrefix(f[0], "BenchmarkOps/"), "/")
		if len(parts) != 2 {
			continue
		}
		op, runner := parts[0], parts[1]
		if i := strings.LastIndexByte(runner, '-'); i > 0 {
			if _, err := strconv.Atoi(runner[i+1:]); err == nil {
				runner = runner[:i] // the -GOMAXPROCS suffix
			}
		}
		// f[1] is the iteration count; then value/unit pairs.
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				break
			}
			k := [3]string{op, runner, f[i+1]}
			s[k] = append(s[k], v)
		}
	}
	return s
}

func (s samples) get(op, runner, unit string) []float64 {
	return s[[3]string{op, runner, unit}]
}

// all is every value of runner and unit, over all ops.
func (s samples) all(runner, unit string) []float64 {
	var v []float64
	for k, xs := range s {
		if k[1] == runner && k[2] == unit {
			v = append(v, xs...)
		}
	}
	return v
}

// runs is how many times the most-run leaf ran.
func (s samples) runs() int {
	n := 0
	for k, xs := range s {
		if k[2] == "ns/op" {
			n = max(n, len(xs))
		}
	}
	return n
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	c := slices.Clone(v)
	slices.Sort(c)
	if len(c)%2 == 1 {
		return c[len(c)/2]
	}
	return (c[len(c)/2-1] + c[len(c)/2]) / 2
}
