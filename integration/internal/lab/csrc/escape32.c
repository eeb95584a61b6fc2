/*
 * escape32: one way round nettrap per run, through the i386 ABI only (it
 * is built with gcc -m32 -static, so every syscall it makes is an i386
 * one, whatever the kernel's native ABI). It prints one line: "ok", or
 * the errno's name and the step that failed.
 *
 *   pidfd-getfd PID FD MARKER   take fd FD of process PID, write MARKER to it
 *   pvw PID ADDR MARKER         process_vm_writev MARKER to ADDR in PID
 *   ptrace-poke PID ADDR MARKER attach to PID, poke MARKER at ADDR, detach
 *   srh FD SEG                  set an IPv6 segment routing header via
 *                               SEG on socket FD
 *   lsrr FD HOP                 set an IPv4 loose source route via HOP on
 *                               socket FD
 *   reuseaddr FD                set SO_REUSEADDR on socket FD (an ordinary
 *                               option, which must keep working)
 *   route FD DST/BITS GW        add a route with SIOCADDRT on socket FD
 *   ifindex FD NAME             SIOCGIFINDEX of NAME on socket FD (an
 *                               ordinary ioctl, which must keep working)
 *
 * MARKER is written with its terminating NUL where it goes into another
 * process's string buffer. PID "ppid" is the parent (nettrap, when run
 * under it).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <net/route.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif

static int fail(const char *step)
{
	const char *name = strerrorname_np(errno);
	printf("%s %s\n", name ? name : "EUNKNOWN", step);
	return 0;
}

static int do_pidfd_getfd(int pid, int fd, const char *marker)
{
	long pidfd = syscall(SYS_pidfd_open, pid, 0);
	if (pidfd < 0)
		return fail("pidfd_open");
	long stolen = syscall(SYS_pidfd_getfd, (int)pidfd, fd, 0);
	if (stolen < 0)
		return fail("pidfd_getfd");
	if (write((int)stolen, marker, strlen(marker)) < 0)
		return fail("write");
	printf("ok\n");
	return 0;
}

static int do_pvw(int pid, unsigned long addr, const char *marker)
{
	size_t n = strlen(marker) + 1;
	struct iovec local = { (void *)marker, n };
	struct iovec remote = { (void *)addr, n };
	if (syscall(SYS_process_vm_writev, pid, &local, 1, &remote, 1, 0) < 0)
		return fail("process_vm_writev");
	printf("ok\n");
	return 0;
}

static int do_ptrace_poke(int pid, unsigned long addr, const char *marker)
{
	int status;
	char word[64] = { 0 };
	size_t n = strlen(marker) + 1;

	if (n > sizeof word)
		n = sizeof word;
	memcpy(word, marker, n);
	if (syscall(SYS_ptrace, PTRACE_ATTACH, pid, 0, 0) < 0)
		return fail("ptrace(PTRACE_ATTACH)");
	if (waitpid(pid, &status, __WALL) < 0)
		return fail("waitpid");
	for (size_t off = 0; off < n; off += 4) {
		uint32_t v;
		memcpy(&v, word + off, 4);
		if (syscall(SYS_ptrace, PTRACE_POKEDATA, pid, addr + off, v) < 0)
			return fail("ptrace(PTRACE_POKEDATA)");
	}
	if (syscall(SYS_ptrace, PTRACE_DETACH, pid, 0, 0) < 0)
		return fail("ptrace(PTRACE_DETACH)");
	printf("ok\n");
	return 0;
}

/* A type 4 (segment routing) header with two segments: the kernel puts
 * the socket's destination in segments[0] and sends the packet to
 * segments[segments_left], the segment given here. */
static int do_srh(int fd, const char *seg)
{
	unsigned char srh[8 + 2 * 16] = { 0 };
	srh[1] = sizeof srh / 8 - 1; /* hdrlen */
	srh[2] = 4;                  /* type: segment routing */
	srh[3] = 1;                  /* segments_left */
	srh[4] = 1;                  /* last entry */
	if (inet_pton(AF_INET6, seg, srh + 8 + 16) != 1) {
		errno = EINVAL;
		return fail("inet_pton");
	}
	if (syscall(SYS_setsockopt, fd, IPPROTO_IPV6, IPV6_RTHDR, srh, sizeof srh) < 0)
		return fail("setsockopt(IPV6_RTHDR)");
	printf("ok\n");
	return 0;
}

static int do_lsrr(int fd, const char *hop)
{
	unsigned char opt[8] = { 1 /* NOP */, 131 /* LSRR */, 7, 4 };
	if (inet_pton(AF_INET, hop, opt + 4) != 1) {
		errno = EINVAL;
		return fail("inet_pton");
	}
	if (syscall(SYS_setsockopt, fd, IPPROTO_IP, IP_OPTIONS, opt, sizeof opt) < 0)
		return fail("setsockopt(IP_OPTIONS)");
	printf("ok\n");
	return 0;
}

static int do_reuseaddr(int fd)
{
	int one = 1;
	if (syscall(SYS_setsockopt, fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0)
		return fail("setsockopt(SO_REUSEADDR)");
	printf("ok\n");
	return 0;
}

static int set_sin(struct sockaddr *sa, const char *addr)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)sa;
	sin->sin_family = AF_INET;
	return inet_pton(AF_INET, addr, &sin->sin_addr) == 1 ? 0 : -1;
}

static int do_route(int fd, const char *dst, const char *gw)
{
	struct rtentry rt;
	char net[32];
	const char *slash = strchr(dst, '/');
	int bits = slash ? atoi(slash + 1) : 32;
	if (!slash || slash - dst >= (long)sizeof net || bits < 0 || bits > 32) {
		errno = EINVAL;
		return fail("prefix");
	}
	memcpy(net, dst, slash - dst);
	net[slash - dst] = 0;
	memset(&rt, 0, sizeof rt);
	if (set_sin(&rt.rt_dst, net) < 0 || set_sin(&rt.rt_gateway, gw) < 0) {
		errno = EINVAL;
		return fail("inet_pton");
	}
	((struct sockaddr_in *)&rt.rt_genmask)->sin_family = AF_INET;
	((struct sockaddr_in *)&rt.rt_genmask)->sin_addr.s_addr = bits ? htonl(~0u << (32 - bits)) : 0;
	rt.rt_flags = RTF_UP | RTF_GATEWAY;
	if (syscall(SYS_ioctl, fd, SIOCADDRT, &rt) < 0)
		return fail("ioctl(SIOCADDRT)");
	printf("ok\n");
	return 0;
}

static int do_ifindex(int fd, const char *name)
{
	struct ifreq ifr;
	memset(&ifr, 0, sizeof ifr);
	strncpy(ifr.ifr_name, name, IFNAMSIZ - 1);
	if (syscall(SYS_ioctl, fd, SIOCGIFINDEX, &ifr) < 0)
		return fail("ioctl(SIOCGIFINDEX)");
	printf("ok\n");
	return 0;
}

static int pid_arg(const char *s)
{
	return strcmp(s, "ppid") == 0 ? (int)getppid() : atoi(s);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc == 5 && strcmp(argv[1], "pidfd-getfd") == 0)
		return do_pidfd_getfd(pid_arg(argv[2]), atoi(argv[3]), argv[4]);
	if (argc == 5 && strcmp(argv[1], "pvw") == 0)
		return do_pvw(pid_arg(argv[2]), strtoul(argv[3], NULL, 0), argv[4]);
	if (argc == 5 && strcmp(argv[1], "ptrace-poke") == 0)
		return do_ptrace_poke(pid_arg(argv[2]), strtoul(argv[3], NULL, 0), argv[4]);
	if (argc == 4 && strcmp(argv[1], "srh") == 0)
		return do_srh(atoi(argv[2]), argv[3]);
	if (argc == 4 && strcmp(argv[1], "lsrr") == 0)
		return do_lsrr(atoi(argv[2]), argv[3]);
	if (argc == 3 && strcmp(argv[1], "reuseaddr") == 0)
		return do_reuseaddr(atoi(argv[2]));
	if (argc == 5 && strcmp(argv[1], "route") == 0)
		return do_route(atoi(argv[2]), argv[3], argv[4]);
	if (argc == 4 && strcmp(argv[1], "ifindex") == 0)
		return do_ifindex(atoi(argv[2]), argv[3]);
	fprintf(stderr, "usage: escape32 pidfd-getfd|pvw|ptrace-poke|srh|lsrr|reuseaddr|route|ifindex ARGS...\n");
	return 2;
}
