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
	// Ping is the udpping op's own figures; nil for the other ops.
	Ping *Ping `json:"ping,omitempty"`
}

// Ping is what the udpping op measures over its timed loop: medians in
// ns, each ping's times taken with the monotonic clock by the goroutine
// that saw the event.
type Ping struct {
	N int `json:"n"` // pings measured
	// BeforeSendToAnswer is the round trip as a test that takes its
	// start time before the send sees it.
	BeforeSendToAnswer float64 `json:"before_send_to_answer_ns"`
	// AfterSendToAnswer is the round trip as a test that takes its start
	// time after the send returned sees it: negative when the answer was
	// read before the send returned.
	AfterSendToAnswer float64 `json:"after_send_to_answer_ns"`
	// AfterSendToArrival is from the send's return to the peer's read of
	// the datagram: negative when the datagram had arrived and been read
	// before the send returned.
	AfterSendToArrival float64 `json:"after_send_to_arrival_ns"`
	// AnswerFirst is the share of pings whose answer was read no later
	// than the send returned (AfterSendToAnswer ≤ 0): a round trip of
	// zero or less for a test that starts its clock after the send.
	AnswerFirst float64 `json:"answer_first"`
}
