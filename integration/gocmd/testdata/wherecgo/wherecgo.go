// Package wherecgo is the cgo case of nettrap's location lines: C code
// calls connect(2) itself, with no Go frame between it and the kernel.
// See package where; the destination is a fake host of the integration
// sandbox, checked by fx.Addr before C sees it.
package wherecgo

/*
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int dial4(const char *ip, int port) {
	struct sockaddr_in sa;
	memset(&sa, 0, sizeof sa);
	sa.sin_family = AF_INET;
	sa.sin_port = htons(port);
	if (inet_pton(AF_INET, ip, &sa.sin_addr) != 1) return -1;
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0) return -1;
	int rc = connect(fd, (struct sockaddr *)&sa, sizeof sa);
	close(fd);
	return rc;
}
*/
import "C"

import (
	"fmt"
	"unsafe"

	"example.com/fixtures/fx"
)

// Dial connects from C to host:port over TCP.
func Dial(host string, port int) error {
	if _, err := fx.Addr(host, port); err != nil {
		return err
	}
	ip := C.CString(host)
	defer C.free(unsafe.Pointer(ip))
	if C.dial4(ip, C.int(port)) != 0 {
		return fmt.Errorf("connect %s:%d from C failed", host, port)
	}
	return nil
}
