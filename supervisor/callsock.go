package supervisor

import "github.com/nettrap/nettrap/supervisor/internal/decode"

// call is one intercepted syscall as the engines and the emulator hold
// it: the decoded call, and the socket an emulated call borrows (no
// allocation per call: a call borrows its socket once at a time).
type call struct {
	decode.Call
	sock borrowed // emusock.go
}
