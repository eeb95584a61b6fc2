package emulate

import "github.com/nettrap/nettrap/supervisor/internal/decode"

// Call is one intercepted syscall as the engines and the emulator hold
// it: the decoded call, and the socket an emulated call borrows (no
// allocation per call: a call borrows its socket once at a time).
type Call struct {
	decode.Call
	sock Borrowed // emusock.go
}
