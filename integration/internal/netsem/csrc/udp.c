/* netsem: UDP sends: control messages, GSO, sizes, corking, sendmmsg. */
#include "netsem.h"

#include <linux/udp.h>
#include <netinet/ip.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif

static char big[70000];

/* got describes what r received until it stayed quiet for 50 ms:
 * "N" datagrams, each "xSIZE" (runs of one size folded), plus a
 * traffic class or ifindex seen in its control data. */
struct got {
	int n, tos, ifindex;
	char sizes[256];
};

static struct got receive(int r)
{
	struct got g = {0, -1, -1, ""};
	static char buf[70000];
	int last = -1, run = 0;
	for (;;) {
		if (!(wait_fd(r, POLLIN, 50) & POLLIN))
			break;
		char cbuf[256];
		struct iovec iov = {buf, sizeof buf};
		struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf};
		long n = recvmsg(r, &m, MSG_DONTWAIT);
		if (n < 0)
			break;
		for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
			if ((c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS))
				g.tos = *(unsigned char *)CMSG_DATA(c);
			if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_TCLASS)
				g.tos = *(int *)CMSG_DATA(c);
			if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO)
				g.ifindex = ((struct in_pktinfo *)CMSG_DATA(c))->ipi_ifindex;
			if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_PKTINFO)
				g.ifindex = ((struct in6_pktinfo *)CMSG_DATA(c))->ipi6_ifindex;
		}
		g.n++;
		if (n == last) {
			run++;
			continue;
		}
		if (run > 1)
			snprintf(g.sizes + strlen(g.sizes), sizeof g.sizes - strlen(g.sizes), "*%d", run);
		snprintf(g.sizes + strlen(g.sizes), sizeof g.sizes - strlen(g.sizes), "%s%ld", last < 0 ? "" : ",", n);
		last = n, run = 1;
	}
	if (run > 1)
		snprintf(g.sizes + strlen(g.sizes), sizeof g.sizes - strlen(g.sizes), "*%d", run);
	return g;
}

static const char *fam_name(int fam) { return fam == AF_INET ? "4" : "6"; }

/* A receiver with the control data it should report. */
static int receiver(int fam)
{
	int r = udp_bound(fam), one = 1;
	if (fam == AF_INET) {
		setsockopt(r, IPPROTO_IP, IP_RECVTOS, &one, sizeof one);
		setsockopt(r, IPPROTO_IP, IP_PKTINFO, &one, sizeof one);
	} else {
		setsockopt(r, IPPROTO_IPV6, IPV6_RECVTCLASS, &one, sizeof one);
		setsockopt(r, IPPROTO_IPV6, IPV6_RECVPKTINFO, &one, sizeof one);
	}
	return r;
}

static void report(const char *base, int fam, const char *res, int r)
{
	char name[64];
	struct got g = receive(r);
	snprintf(name, sizeof name, "%s%s", base, fam_name(fam));
	out(name, "%s peer=%d[%s] tos=%d ifindex=%d", res, g.n, g.sizes, g.tos, g.ifindex);
}

/* sendmsg of n bytes of big to r's port with one control message. */
static long send_cmsg(int s, int fam, int port, long n, int level, int type, const void *data, int len)
{
	struct sockaddr_storage sa;
	char cbuf[CMSG_SPACE(64)] = {0};
	struct iovec iov = {big, n};
	struct msghdr m = {.msg_name = &sa, .msg_namelen = loaddr(fam, port, &sa), .msg_iov = &iov, .msg_iovlen = 1};
	if (len) {
		m.msg_control = cbuf, m.msg_controllen = CMSG_SPACE(len);
		struct cmsghdr *c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = level, c->cmsg_type = type, c->cmsg_len = CMSG_LEN(len);
		memcpy(CMSG_DATA(c), data, len);
	}
	return sendmsg(s, &m, 0);
}

static long send_to(int s, int fam, int port, const void *p, long n, int flags)
{
	struct sockaddr_storage sa;
	return sendto(s, p, n, flags, (struct sockaddr *)&sa, loaddr(fam, port, &sa));
}

static void control(int fam)
{
	int r = receiver(fam), s = udp_bound(fam), p = port_of(r);
	int gso = 100; /* the option is an int, the control message a u16 */
	setsockopt(s, IPPROTO_UDP, UDP_SEGMENT, &gso, sizeof gso);
	report("udp-gso-sockopt", fam, rc(send_to(s, fam, p, big, 1000, 0)), r);
	gso = 0;
	setsockopt(s, IPPROTO_UDP, UDP_SEGMENT, &gso, sizeof gso);
	uint16_t seg = 250;
	report("udp-gso-cmsg", fam, rc(send_cmsg(s, fam, p, 1000, IPPROTO_UDP, UDP_SEGMENT, &seg, sizeof seg)), r);
	if (fam == AF_INET) {
		int tos = 0x28;
		report("udp-tos", fam, rc(send_cmsg(s, fam, p, 10, IPPROTO_IP, IP_TOS, &tos, sizeof tos)), r);
		struct in_pktinfo pi = {.ipi_ifindex = 1};
		report("udp-pktinfo", fam, rc(send_cmsg(s, fam, p, 10, IPPROTO_IP, IP_PKTINFO, &pi, sizeof pi)), r);
	} else {
		int tc = 0x28;
		report("udp-tclass", fam, rc(send_cmsg(s, fam, p, 10, IPPROTO_IPV6, IPV6_TCLASS, &tc, sizeof tc)), r);
		struct in6_pktinfo pi = {.ipi6_ifindex = 1, .ipi6_addr = IN6ADDR_LOOPBACK_INIT};
		report("udp-pktinfo", fam, rc(send_cmsg(s, fam, p, 10, IPPROTO_IPV6, IPV6_PKTINFO, &pi, sizeof pi)), r);
	}
	close(s);
	close(r);
}

/* The largest datagram, and one byte more; vectors up to UIO_MAXIOV. */
static void sizes(int fam)
{
	int r = receiver(fam), s = udp_bound(fam), p = port_of(r);
	long max = fam == AF_INET ? 65507 : 65527;
	report("udp-max", fam, rc(send_to(s, fam, p, big, max, 0)), r);
	report("udp-max+1", fam, rc(send_to(s, fam, p, big, max + 1, 0)), r);
	for (int cnt = 1024; cnt <= 1025; cnt++) {
		struct iovec *iov = calloc(cnt, sizeof *iov);
		struct sockaddr_storage sa;
		for (int i = 0; i < cnt; i++)
			iov[i] = (struct iovec){big, 1};
		struct msghdr m = {.msg_name = &sa, .msg_namelen = loaddr(fam, p, &sa), .msg_iov = iov, .msg_iovlen = cnt};
		report(cnt == 1024 ? "udp-iov1024-" : "udp-iov1025-", fam, rc(sendmsg(s, &m, 0)), r);
		free(iov);
	}
	close(s);
	close(r);
}

/* MSG_MORE corks: two sends arrive as one datagram. MSG_DONTWAIT. A
 * connected socket learns of an ICMP port unreachable. */
static void flags(int fam)
{
	int r = receiver(fam), s = udp_bound(fam), p = port_of(r);
	char first[32];
	strcpy(first, rc(send_to(s, fam, p, "ab", 2, MSG_MORE)));
	char both[64];
	snprintf(both, sizeof both, "%s,%s", first, rc(send_to(s, fam, p, "cd", 2, 0)));
	report("udp-more", fam, both, r);
	report("udp-dontwait", fam, rc(send_to(s, fam, p, big, 100, MSG_DONTWAIT)), r);
	long n = 0, e;
	while ((e = send_to(s, fam, p, big, 1000, MSG_MORE | MSG_DONTWAIT)) > 0 && n < 1000)
		n++;
	char fill[64];
	snprintf(fill, sizeof fill, "corked=%ld then=%s", n, en(errno));
	report("udp-cork-fill", fam, fill, r);
	close(s);

	s = udp_bound(fam);
	struct sockaddr_storage sa;
	connect(s, (struct sockaddr *)&sa, loaddr(fam, closed_port(fam), &sa));
	struct iovec iov = {"z", 1};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
	strcpy(first, rc(sendmsg(s, &m, 0)));
	msleep(50);
	char name[32];
	snprintf(name, sizeof name, "udp-refused%s", fam_name(fam));
	out(name, "%s then=%s", first, rc(sendmsg(s, &m, 0)));
	close(s);
	close(r);
}

/* sendmmsg returns the count sent: a third message too big, or with a bad
 * pointer, stops it at 2. msg_len is set for the sent ones. */
static void mmsg(int fam)
{
	int r = receiver(fam), s = udp_bound(fam), p = port_of(r);
	struct sockaddr_storage sa;
	socklen_t len = loaddr(fam, p, &sa);
	for (int bad = 0; bad < 2; bad++) {
		struct iovec iov[3] = {{big, 10}, {big, 20}, {bad ? (void *)8 : big, bad ? 30 : 70000}};
		struct mmsghdr mm[3];
		memset(mm, 0, sizeof mm);
		for (int i = 0; i < 3; i++) {
			mm[i].msg_hdr = (struct msghdr){.msg_name = &sa, .msg_namelen = len, .msg_iov = &iov[i], .msg_iovlen = 1};
			mm[i].msg_len = 99;
		}
		char res[64];
		long n = sendmmsg(s, mm, 3, 0);
		snprintf(res, sizeof res, "%s lens=%u,%u,%u", rc(n), mm[0].msg_len, mm[1].msg_len, mm[2].msg_len);
		report(bad ? "sendmmsg-efault" : "sendmmsg-emsgsize", fam, res, r);
	}
	close(s);
	close(r);
}

void udp_scenarios(void)
{
	int fams[] = {AF_INET, AF_INET6};
	memset(big, 'u', sizeof big);
	for (int i = 0; i < 2; i++) {
		int r = receiver(fams[i]), s = udp_bound(fams[i]);
		report("udp-sendto", fams[i], rc(send_to(s, fams[i], port_of(r), "hello", 5, 0)), r);
		close(s);
		close(r);
		control(fams[i]);
		sizes(fams[i]);
		flags(fams[i]);
		mmsg(fams[i]);
	}
}
