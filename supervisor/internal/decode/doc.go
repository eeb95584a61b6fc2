// Package decode turns an intercepted call into the decision.Call a
// decider sees, whatever the engine that holds it (Call, Holder): it
// reads the call's arguments from the stopped target as the kernel will
// copy them in (ReadDests: the sockaddrs, every msghdr of a sendmmsg,
// control data, a setsockopt's value, a netlink send's messages), so that
// a bad pointer or length gets the errno the kernel would give, and it
// learns from the kernel what the decision needs beyond that memory
// (Call.Decode: the namespace a call acts in, what a netlink send asks
// for, whom a cross-process call reaches). It keeps the bytes it read
// (RawMsg) for the emulator, which makes an allowed call with them, and
// gives the supervisor's Task (caller, socket type, tree namespace) on
// first use.
package decode
