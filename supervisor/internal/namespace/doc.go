// Package namespace knows the network namespace the command started in
// (Starting, read by Read): its id and its SO_NETNS_COOKIE, which tell
// whether a call or a socket acts in it, and which network namespaces
// belong to the confined tree (SetTree, OwnsSocket, OwnsThread).
//
// # The tree's namespaces
//
// Where the command runs in a user namespace of its own
// (supervisor/userns.go), every network namespace its tree makes is owned
// by that user namespace or one below it, and the kernel refuses the tree
// any change to a namespace it did not make: no veth peer, VXLAN, macvlan
// or moved device can lead out of one of these, and no process of the tree
// can enter another. What a socket of such a namespace reaches is in the
// tree's own namespaces, so a connect or send there, and a packet socket
// made there, leaves nothing behind: it is allowed (class own-netns,
// audited). A namespace qualifies by its owner, which never changes: one
// that a process outside the tree owns (the starting namespace, a
// container's, a rootless runtime's) never does, and without the user
// namespace (--userns=off, the fallback, an unprivileged nettrap) none
// does.
//
// A socket is asked for its own namespace (SIOCGSKNS), not its caller's: a
// socket made in the starting namespace stays there wherever its holder
// goes. The descriptor number is looked up again by the kernel, so such a
// connect or send is allowed only when nettrap makes it itself, and the
// emulator checks the socket it borrowed again (supervisor/emulate.go).
package namespace
