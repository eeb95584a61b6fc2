// Command escapee tries one way round nettrap per run, from the 64-bit
// ABI, and prints one JSON line with the outcome: {"op", "ok", "errno",
// "err"}. The escape tests run it in the lab's inside namespace, first
// unguarded (to show the way leads out), then under nettrap.
//
//	udp DST MARKER [OPT=V...]   send MARKER to DST from a fresh UDP socket
//	unix-send stream|dgram NAME MSG
//	                            connect to the unix socket NAME (@ for an
//	                            abstract name) and write MSG, or send it
//	                            as a datagram
//	tcp-send DST MSG            connect to DST and write MSG
//	own-servers                 talk to unix and loopback sockets of its
//	                            own (they must work under --sealed)
//	own-servers-closing N       N times: listen on 127.0.0.1, a unix path
//	                            and an abstract name, dial each while
//	                            closing it (refused or not, never a peer
//	                            outside the tree under --sealed)
//	tcp DST [OPT=V...]          start a connect to DST (the SYN is the leak)
//	    OPT: unicast-if=IDX (IP_UNICAST_IF or IPV6_UNICAST_IF),
//	         pktinfo=IDX (an IP_PKTINFO/IPV6_PKTINFO control message),
//	         lsrr=HOP (udp only: an IP_RETOPTS control message, a loose
//	         source route through HOP),
//	         sticky-pktinfo=IDX (setsockopt IPV6_PKTINFO),
//	         bindtodevice=NAME, bindtoifindex=IDX
//	join OPTION GROUP [SOURCE]  join GROUP (OPTION: ip-add-membership,
//	                            ip-add-source-membership, mcast-join-group,
//	                            mcast-join-source-group, ipv6-join-group)
//	join-lo OPTION GROUP [SOURCE]
//	                            the same on lo (index 1), for the options
//	                            that take an index
//	xdp IFINDEX SRCMAC DSTMAC SRC DST:PORT MARKER
//	                            put a UDP frame on the wire with AF_XDP
//	udp-after DST MARKER PROG ARGS...
//	                            run PROG with a UDP socket as fd 3, then
//	                            send MARKER to DST from that socket
//	route-nl PREFIX GW MODE     add a route over rtnetlink (MODE: write, or
//	                            sendto naming the kernel)
//	route-nl-away PREFIX GW MODE
//	                            the same on a socket made before its
//	                            thread moved to a new network namespace
//	route-ioctl PREFIX GW       add a route with SIOCADDRT
//	route-ioctl-away PREFIX GW  the same on a socket made before its
//	                            thread moved to a new network namespace
//	read-nl                     net.Interfaces and an RTM_GETROUTE dump
//	own-netns-route MODE        unshare a network namespace, add routes
//	                            there (route-nl MODE, then SIOCADDRT)
//	dnat MARKER                 add an nftables DNAT 127.0.0.2:80 ->
//	                            203.0.113.7:80, then send MARKER there
//	ipt-dnat IFACE MARKER       write the legacy iptables nat table (DNAT
//	                            127.0.0.2 -> 203.0.113.7, MASQUERADE out
//	                            of IFACE) with setsockopt on a UDP
//	                            socket, then send MARKER to 127.0.0.2:80
//	ipt-flush                   empty the legacy nat table
//	ipt-empty                   fail unless the legacy nat table is empty
//	cgroup-connect MARKER       attach a connect4 BPF rewrite to a fresh
//	                            cgroup of its own, then send MARKER to
//	                            127.0.0.2:80
//	veth-vxlan REMOTE MARKER    in a namespace of its own: a veth whose
//	                            peer goes to the starting namespace, a
//	                            VXLAN over the starting namespace (its id
//	                            there) to REMOTE:4789, then MARKER sent
//	                            to 127.0.0.9:9, routed into the VXLAN
//	own-topology                two namespaces of its own joined by a
//	                            veth, 192.0.2.0/24 and 10.77.0.0/24 on
//	                            it: TCP, UDP and a packet socket's frame
//	                            from one to servers in the other
//	veth-own                    a veth between two namespaces of its
//	                            own, the peer's named by descriptor
//	                            (what CNI plugins do); fail unless the
//	                            peer is there
//	macvlan IFACE ADDR GW MARKER
//	                            in a namespace of its own: a macvlan on
//	                            the starting namespace's IFACE with ADDR,
//	                            default route via GW, a DNAT 127.0.0.2:80
//	                            -> 203.0.113.7:80, then MARKER sent there
//	setns-dnat NSPATH MARKER    enter the network namespace at NSPATH,
//	                            add the DNAT there, send MARKER to
//	                            127.0.0.2:80
//	socket FAMILY               create (and close) a socket of FAMILY
//	                            (vsock, bluetooth, can, tipc, alg, …)
//	write-fd FD MARKER          write MARKER to FD
//	open-mem PID                open /proc/PID/mem for writing
//	open-fd PID FD              open /proc/PID/fd/FD
//	                            (PID "ppid": the parent, e.g. nettrap)
//	procmem TARGET DST MARKER [FD [STOLEN]]
//	                            issue 35's attack (package procmem) on
//	                            TARGET (go: the go command among the
//	                            ancestors; reaper: nettrap's reaper, the
//	                            group's leader; waker: the ptrace
//	                            engine's waker; or a pid): a signal,
//	                            pidfd_getfd of FD (STOLEN written to it),
//	                            process_vm_readv/writev, then a payload
//	                            written through /proc/PID/mem that sends
//	                            MARKER to DST and exits 77; prints
//	                            procmem's Result as its line
//	idle read|pause             print the pid, then block as nettrap's
//	                            reaper (reading stdin, its signals
//	                            ignored) or the waker (pause) does: a
//	                            victim for procmem
package main
