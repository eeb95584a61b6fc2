// Package capless keeps one locked OS thread without capabilities
// (Maker): the netlink sockets it makes are handed to a confined
// process in place of its own, and the netlink sends it makes are the
// kernel's to refuse, since the kernel checks the capabilities of the
// socket's opener for every change asked through it. Which calls get
// such a socket is decided elsewhere; this package only makes them.
package capless
