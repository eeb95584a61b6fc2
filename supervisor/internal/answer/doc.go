// Package answer is the answer path both engines share: Decide asks the
// decider (failing the call closed if it panics), Settle carries out
// what the answer asks beyond allow and deny (an emulated call, a
// refusal of an unchecked peer, a redirect to a stand-in), and Stats
// counts what was answered. Each engine then answers the kernel its own
// way: a notification response, or a skipped or resumed stop.
package answer
