// Package procfs is nettrap's reader of /proc (package callstack keeps its
// own /proc/TID/syscall and maps reads beside the unwinder): the facts it needs
// about other processes (parent, thread group, executable and command
// line, start time, pid namespace, the target of a pidfd), about their
// sockets (kind and netlink protocol from /proc/TID/net, by inode) and
// namespaces, this process's cgroup v2 directory, and the paths of the
// files other packages open there (/proc/TID/mem, ns/net). Parsing stays here; callers get values.
package procfs
