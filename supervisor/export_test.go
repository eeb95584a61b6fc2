package supervisor

// The internal tests' builders of control data, for the external tests
// that send it to the kernel.
var (
	Cmsg       = cmsg
	InPktinfo  = inPktinfo
	In6Pktinfo = in6Pktinfo
)
