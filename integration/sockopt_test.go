package integration

import "golang.org/x/sys/unix"

func setsockoptBroadcast(fd int) error {
	return unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_BROADCAST, 1)
}
