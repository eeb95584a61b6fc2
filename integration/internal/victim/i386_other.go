//go:build !amd64

package main

import "errors"

// The i386 gate only exists on x86_64 kernels.
var errNoI386 = errors.New("the i386 ABI exists only on amd64")

const mapLow = 0

var errHighPage = errNoI386

func i386Socket([]string) (any, error)        { return nil, errNoI386 }
func i386Connect([]string) (any, error)       { return nil, errNoI386 }
func i386ConnectDirect([]string) (any, error) { return nil, errNoI386 }
