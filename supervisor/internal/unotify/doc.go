// Package unotify is the seccomp user-notification ABI
// (include/uapi/linux/seccomp.h, seccomp_unotify(2)) the notify engine
// speaks on its listener: the structs (Notif, Resp, Addfd) laid out as
// the kernel's, and the ioctls that receive a notification, answer it,
// hand a descriptor in, check that it is still pending, and ask for
// synchronous wake-ups. It makes no decision.
package unotify
