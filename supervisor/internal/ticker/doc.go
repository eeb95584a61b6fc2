// Package ticker runs a check every period while there is something to
// check, and sleeps otherwise: the one slow-call watcher of both engines'
// machinery. The notify loop's watchdog (a call held too long by its
// receiver passes the turn to a new one) and the emulated calls' watcher
// (a call that runs long gets a watch on its target) are both "look every
// millisecond while calls come, stop when none came for a while", and
// both must never miss a call that arrives just as the ticking stops.
//
// The per-call cost is what matters: Arm is an atomic add and an atomic
// load while the Ticker ticks, no timer, no goroutine, no allocation.
// Tickers of one period share one goroutine (a clock), so a connect that
// arms both wakes the Go scheduler once a millisecond, not twice.
package ticker
