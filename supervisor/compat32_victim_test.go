package supervisor_test

import "errors"

// errNoI386 says the victim cannot make i386 calls here (i386Connect).
var errNoI386 = errors.New("no-i386")
