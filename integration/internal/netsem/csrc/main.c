/* netsem: main and helpers. Every scenario prints one line per result;
 * the lines are the same bare, under nettrap --emulate=on and --emulate=off
 * (except the line "tell:", which says who makes a blocking connect). */
#include "netsem.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void out(const char *name, const char *fmt, ...)
{
	va_list ap;
	printf("%s: ", name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

const char *en(int e)
{
	if (e == 0)
		return "ok";
	const char *n = strerrorname_np(e);
	return n ? n : "E?";
}

const char *rc(long r)
{
	static __thread char buf[32];
	if (r < 0)
		return en(errno);
	snprintf(buf, sizeof buf, "%ld", r);
	return buf;
}

static void die(const char *what)
{
	fprintf(stderr, "netsem: %s: %s\n", what, strerror(errno));
	exit(2);
}

socklen_t loaddr(int fam, int port, struct sockaddr_storage *sa)
{
	memset(sa, 0, sizeof *sa);
	if (fam == AF_INET) {
		struct sockaddr_in *a = (struct sockaddr_in *)sa;
		a->sin_family = AF_INET;
		a->sin_port = htons(port);
		inet_pton(AF_INET, LOOP4, &a->sin_addr);
		return sizeof *a;
	}
	struct sockaddr_in6 *a = (struct sockaddr_in6 *)sa;
	a->sin6_family = AF_INET6;
	a->sin6_port = htons(port);
	inet_pton(AF_INET6, LOOP6, &a->sin6_addr);
	return sizeof *a;
}

int port_of(int fd)
{
	struct sockaddr_storage sa;
	socklen_t len = sizeof sa;
	if (getsockname(fd, (struct sockaddr *)&sa, &len) < 0)
		die("getsockname");
	if (sa.ss_family == AF_INET)
		return ntohs(((struct sockaddr_in *)&sa)->sin_port);
	return ntohs(((struct sockaddr_in6 *)&sa)->sin6_port);
}

static int bound(int fam, int type)
{
	struct sockaddr_storage sa;
	int fd = socket(fam, type | SOCK_CLOEXEC, 0);
	if (fd < 0)
		die("socket");
	if (bind(fd, (struct sockaddr *)&sa, loaddr(fam, 0, &sa)) < 0)
		die("bind");
	return fd;
}

int tcp_listener(int fam, int backlog, int tfo)
{
	int fd = bound(fam, SOCK_STREAM);
	if (tfo && setsockopt(fd, IPPROTO_TCP, TCP_FASTOPEN, &tfo, sizeof tfo) < 0)
		die("TCP_FASTOPEN");
	if (listen(fd, backlog) < 0)
		die("listen");
	return fd;
}

int full_listener(int fam)
{
	struct sockaddr_storage sa;
	int l = tcp_listener(fam, 0, 0);
	socklen_t len = loaddr(fam, port_of(l), &sa);
	/* listen(0) queues one connection; the next SYN is dropped. Fill
	 * until a connect stays in progress (the fillers stay open). */
	for (int i = 0; i < 8; i++) {
		int c = socket(fam, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (c < 0)
			die("socket");
		connect(c, (struct sockaddr *)&sa, len);
		if (wait_fd(c, POLLOUT, 100) == 0)
			return l;
	}
	fprintf(stderr, "netsem: the accept queue never filled\n");
	exit(2);
}

int udp_bound(int fam) { return bound(fam, SOCK_DGRAM); }

int closed_port(int fam)
{
	int fd = bound(fam, SOCK_STREAM);
	int p = port_of(fd);
	close(fd);
	return p;
}

int nonblock(int fd, int on)
{
	int fl = fcntl(fd, F_GETFL);
	return fcntl(fd, F_SETFL, on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK);
}

int set_sndtimeo(int fd, int ms)
{
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
	return setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

int so_error(int fd)
{
	int e = 0;
	socklen_t len = sizeof e;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &len) < 0)
		return errno;
	return e;
}

int wait_fd(int fd, int events, int ms)
{
	struct pollfd p = {fd, events, 0};
	int n;
	do
		n = poll(&p, 1, ms);
	while (n < 0 && errno == EINTR);
	return n > 0 ? p.revents : 0;
}

int syn_sent_to(int port)
{
	const char *files[] = {"/proc/net/tcp", "/proc/net/tcp6"};
	int n = 0;
	for (int i = 0; i < 2; i++) {
		FILE *f = fopen(files[i], "r");
		char line[512];
		if (!f)
			continue;
		while (fgets(line, sizeof line, f)) {
			char rem[64];
			unsigned st;
			/* sl local rem st ... ; rem is ADDR:PORT in hex */
			if (sscanf(line, "%*s %*s %63s %x", rem, &st) != 2)
				continue;
			char *c = strrchr(rem, ':');
			if (c && st == 2 /* TCP_SYN_SENT */ && (int)strtol(c + 1, NULL, 16) == port)
				n++;
		}
		fclose(f);
	}
	return n;
}

void msleep(int ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

void in_syscall(int pid, int tid, long nr)
{
	char path[64], buf[32];
	snprintf(path, sizeof path, "/proc/%d/task/%d/syscall", pid, tid);
	for (int i = 0; i < 1000; i++) {
		FILE *f = fopen(path, "r");
		long got = -1;
		if (f) {
			if (fgets(buf, sizeof buf, f) && buf[0] >= '0' && buf[0] <= '9')
				got = strtol(buf, NULL, 10);
			fclose(f);
		}
		if (got == nr)
			break;
		msleep(10);
	}
	msleep(200);
}

static void tfo_sysctl(void)
{
	char buf[32] = "";
	FILE *f = fopen("/proc/sys/net/ipv4/tcp_fastopen", "r");
	if (f) {
		if (!fgets(buf, sizeof buf, f))
			buf[0] = 0;
		fclose(f);
	}
	buf[strcspn(buf, "\n")] = 0;
	out("tcp_fastopen", "%s", buf);
}

int main(int argc, char **argv)
{
	struct {
		const char *name;
		void (*run)(void);
	} groups[] = {
		{"tcp", tcp_scenarios},
		{"signal", signal_scenarios},
		{"stream", stream_send_scenarios},
		{"udp", udp_scenarios},
		{"thread", thread_scenarios},
		{"unix", unix_scenarios},
	};
	setvbuf(stdout, NULL, _IOLBF, 0);
	tfo_sysctl();
	for (size_t i = 0; i < sizeof groups / sizeof groups[0]; i++) {
		int want = argc < 2;
		for (int a = 1; a < argc; a++)
			want |= strcmp(argv[a], groups[i].name) == 0;
		if (want)
			groups[i].run();
	}
	return 0;
}
