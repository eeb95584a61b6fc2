// Package nlparse reads netlink requests from their bytes, as the kernel
// walks them: which change a send asks for (ChangeRequest), and where
// an rtnetlink request names a descriptor the kernel would look up in
// the sender's table (RouteFdOffsets). It makes no call.
package nlparse
