//go:build race

package bpf

// raceEnabled: the race detector is on (go test -race).
const raceEnabled = true
