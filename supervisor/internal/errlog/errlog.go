package errlog

import (
	"fmt"
	"sync"
)

// maxErrors is how many of its own errors the supervisor keeps for
// Session.Errors; a target that makes every call fail the same way would
// otherwise fill the memory and the terminal.
const maxErrors = 16

// Log keeps the first maxErrors errors and counts the others, so that
// none is dropped silently.
type Log struct {
	mu   sync.Mutex
	errs []error
	more int
}

func (e *Log) Add(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.errs) < maxErrors {
		e.errs = append(e.errs, err)
		return
	}
	e.more++
}

// Take returns the errors kept so far, followed by "and N more" when some
// were only counted, and starts over.
func (e *Log) Take() []error {
	e.mu.Lock()
	defer e.mu.Unlock()
	errs := e.errs
	if e.more > 0 {
		errs = append(errs, fmt.Errorf("and %d more", e.more))
	}
	e.errs, e.more = nil, 0
	return errs
}
