// Command escapee tries one way round nettrap per run, from the 64-bit
// ABI, and prints one JSON line with the outcome: {"op", "ok", "errno",
// "err"}. The escape tests run it in the lab's inside namespace, first
// unguarded (to show the way leads out), then under nettrap.
//
//	udp DST MARKER [OPT=V...]   send MARKER to DST from a fresh UDP socket
//	tcp DST [OPT=V...]          start a connect to DST (the SYN is the leak)
//	    OPT: unicast-if=IDX (IP_UNICAST_IF or IPV6_UNICAST_IF),
//	         pktinfo=IDX (an IP_PKTINFO/IPV6_PKTINFO control message),
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
//	socket FAMILY               create (and close) a socket of FAMILY
//	                            (vsock, bluetooth, can, tipc, alg, …)
//	write-fd FD MARKER          write MARKER to FD
//	open-mem PID                open /proc/PID/mem for writing
//	open-fd PID FD              open /proc/PID/fd/FD
//	                            (PID "ppid": the parent, e.g. nettrap)
package main
