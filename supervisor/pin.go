package supervisor

import (
	"strconv"
)

// loopbackIndex is the interface index of lo in every network namespace:
// the kernel registers lo first in each one and refuses to go on if it
// got any other index (LOOPBACK_IFINDEX, drivers/net/loopback.c). So the
// target's lo can be recognised by index without entering its namespace.
const loopbackIndex = 1

// pinnedIndex describes what pinning to interface index ifindex means:
// "" for no interface (0) or lo, else "ifindex N".
func pinnedIndex(ifindex int32) string {
	if ifindex == 0 || ifindex == loopbackIndex {
		return ""
	}
	return "ifindex " + strconv.Itoa(int(ifindex))
}

// pinnedName does the same for a name (SO_BINDTODEVICE): "" (unbind) and
// "lo" are fine, any other name is quoted. Names are the target's, in its
// own namespace: lo keeps its name there unless someone with
// CAP_NET_ADMIN renames it while it is down.
func pinnedName(name string) string {
	if name == "" || name == "lo" {
		return ""
	}
	return strconv.Quote(name)
}
