// Package wire is the one definition of what the workload prints on
// stdout and the benchmark reads, so that the two cannot drift apart.
package wire

// Result is one workload run's measurement, printed as a JSON line.
type Result struct {
	Op      string  `json:"op"`
	N       int     `json:"n"`
	NsPerOp float64 `json:"ns_per_op"`
	// SelfHWM is the workload's peak RSS, ParentHWM its parent's (the
	// supervisor, when there is one), both in KiB from /proc/*/status.
	SelfHWM   int `json:"self_hwm_kib"`
	ParentHWM int `json:"parent_hwm_kib"`
	// SelfCPU and ParentCPU are the CPU time the workload and its parent
	// (all threads) spent per operation in the timed loop, in ns: less
	// swayed than the wall time by other work on a shared machine. 0
	// when the parent's clock cannot be read.
	SelfCPU   float64 `json:"self_cpu_ns_per_op"`
	ParentCPU float64 `json:"parent_cpu_ns_per_op"`
}
