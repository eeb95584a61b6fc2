// Package sockopt reads a trapped setsockopt's value from the target as
// the kernel will copy it in (Value keeps the bytes, so that an allowed
// option is set with the very bytes that were checked): the interface a
// pinning option names (ReadPin) and the group a join option names
// (ReadJoin). PinnedIndex and LoopbackIndex tell what pinning to an
// interface index means, for control messages too.
package sockopt
