package supervisor_test

// i386Connect: an AArch64 process makes no i386 calls.
func i386Connect(string) error { return errNoI386 }
