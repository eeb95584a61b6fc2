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
}
