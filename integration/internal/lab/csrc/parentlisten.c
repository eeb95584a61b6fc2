/*
 * parentlisten: a seccomp listener above nettrap, as WSL2's init installs
 * one in mirrored networking mode (microsoft/WSL#9548).
 *
 *   parentlisten [--trap bind,listen] [--count FILE] -- argv...
 *
 * It installs a filter with SECCOMP_FILTER_FLAG_NEW_LISTENER (after
 * no_new_privs) that returns SECCOMP_RET_USER_NOTIF for the listed native
 * x86_64 syscalls (default bind and listen) and ALLOW for everything
 * else, i386 calls included (WSL does not care about them either), and
 * execs argv under it: the whole tree argv starts inherits the filter,
 * and a second listener below is refused with EBUSY.
 *
 * The listener is served by a process outside the filter, as init is: a
 * child forked before the filter exists, which receives the listener over
 * a socket pair (from a thread without the filter), leaves the process group (a signal to the command's
 * group is not for it), and answers every notification with
 * SECCOMP_USER_NOTIF_FLAG_CONTINUE until no process uses the filter any
 * more (POLLHUP). argv itself keeps parentlisten's pid and parent, so a
 * test sees nettrap as it would without the listener: its exit status,
 * its signals, its parent (go test -exec). With --count the server
 * rewrites FILE with the number of notifications answered after each, so
 * a test can prove that the listener really trapped something: a call
 * counts before it proceeds.
 *
 * Under a listener already (EBUSY: one parentlisten started under
 * another, as nested nettraps of a test are), it execs argv as it is.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAXTRAP 32

static const struct {
	const char *name;
	int nr;
} calls[] = {
	{"socket", SYS_socket},     {"socketpair", SYS_socketpair},
	{"bind", SYS_bind},         {"listen", SYS_listen},
	{"connect", SYS_connect},   {"accept", SYS_accept},
	{"accept4", SYS_accept4},   {"sendto", SYS_sendto},
	{"sendmsg", SYS_sendmsg},   {"sendmmsg", SYS_sendmmsg},
	{"recvfrom", SYS_recvfrom}, {"recvmsg", SYS_recvmsg},
	{"recvmmsg", SYS_recvmmsg}, {"setsockopt", SYS_setsockopt},
	{"getsockopt", SYS_getsockopt}, {"shutdown", SYS_shutdown},
	{"getsockname", SYS_getsockname}, {"getpeername", SYS_getpeername},
};

static void die(const char *what)
{
	fprintf(stderr, "parentlisten: %s: %s\n", what, strerror(errno));
	exit(120);
}

static void usage(const char *msg)
{
	fprintf(stderr, "parentlisten: %s\nusage: parentlisten [--trap bind,listen] [--count FILE] -- argv...\n", msg);
	exit(120);
}

/* parseTraps fills nrs with the syscall numbers named in list. */
static int parseTraps(const char *list, int *nrs)
{
	char *copy = strdup(list);
	int n = 0;
	for (char *name = strtok(copy, ","); name; name = strtok(NULL, ",")) {
		size_t i;
		for (i = 0; i < sizeof calls / sizeof calls[0]; i++)
			if (strcmp(calls[i].name, name) == 0)
				break;
		if (i == sizeof calls / sizeof calls[0]) {
			fprintf(stderr, "parentlisten: unknown syscall %s\n", name);
			exit(120);
		}
		if (n == MAXTRAP)
			usage("too many syscalls");
		nrs[n++] = calls[i].nr;
	}
	free(copy);
	if (n == 0)
		usage("--trap names no syscall");
	return n;
}

/* install loads the filter and returns its listener, or -1 when a
 * listener above holds the chain's one already (EBUSY). */
static int install(const int *nrs, int n)
{
	struct sock_filter f[4 + MAXTRAP + 1];
	int k = 0;

	f[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
	/* Another architecture (i386): allow, to the RET ALLOW at 3+n. */
	f[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 0, n + 1);
	f[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
	for (int i = 0; i < n; i++)
		f[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nrs[i], n - i, 0);
	f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF);
	struct sock_fprog prog = {.len = k, .filter = f};

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		die("prctl(PR_SET_NO_NEW_PRIVS)");
	int fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
	if (fd < 0 && errno != EBUSY)
		die("seccomp(SECCOMP_FILTER_FLAG_NEW_LISTENER)");
	return fd;
}

static void sendFd(int sock, int fd)
{
	char byte = 0;
	struct iovec iov = {.iov_base = &byte, .iov_len = 1};
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof fd);
	if (sendmsg(sock, &msg, 0) != 1)
		die("sendmsg(listener)");
}

/* recvFd returns the listener, or -1 when none comes (EOF). */
static int recvFd(int sock)
{
	char byte;
	struct iovec iov = {.iov_base = &byte, .iov_len = 1};
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
	ssize_t r = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	if (r != 1 || !c || c->cmsg_type != SCM_RIGHTS)
		return -1;
	int fd;
	memcpy(&fd, CMSG_DATA(c), sizeof fd);
	return fd;
}

static void writeCount(const char *path, unsigned long count)
{
	char buf[32];
	int n = snprintf(buf, sizeof buf, "%lu\n", count);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, buf, n) != n || close(fd) < 0)
		die(path);
}

/* serve answers notifications until no process uses the filter. */
static void serve(int listener, const char *countFile)
{
	struct seccomp_notif_sizes sz;
	if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sz) < 0)
		die("seccomp(SECCOMP_GET_NOTIF_SIZES)");
	struct seccomp_notif *req = calloc(1, sz.seccomp_notif);
	struct seccomp_notif_resp *resp = calloc(1, sz.seccomp_notif_resp);
	if (!req || !resp)
		die("calloc");
	unsigned long count = 0;

	for (;;) {
		struct pollfd p = {.fd = listener, .events = POLLIN};
		if (poll(&p, 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			die("poll");
		}
		if (!(p.revents & POLLIN)) {
			if (p.revents & (POLLHUP | POLLERR))
				return;
			continue;
		}
		memset(req, 0, sz.seccomp_notif);
		if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, req) < 0) {
			/* ENOENT: the caller died before we read it. */
			if (errno == ENOENT || errno == EINTR)
				continue;
			die("ioctl(SECCOMP_IOCTL_NOTIF_RECV)");
		}
		memset(resp, 0, sz.seccomp_notif_resp);
		resp->id = req->id;
		resp->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
		/* Counted before the answer lets the call go on. */
		if (countFile)
			writeCount(countFile, ++count);
		if (ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, resp) < 0 && errno != ENOENT)
			die("ioctl(SECCOMP_IOCTL_NOTIF_SEND)");
	}
}

/* handOver is a thread created before the filter, so without it: it
 * passes the listener to the server with sendmsg, which the filter may
 * trap (--trap sendmsg), and a trapped call of ours would wait for the
 * very server it is addressed to. */
struct handOver {
	int sock;
	int pipe[2];
};

static void *handOverThread(void *arg)
{
	struct handOver *h = arg;
	int fd;
	if (read(h->pipe[0], &fd, sizeof fd) == sizeof fd && fd >= 0)
		sendFd(h->sock, fd);
	return NULL;
}

/* startServer forks the server, outside the filter still to come; it
 * returns the socket to hand it the listener on. */
static int startServer(const char *countFile)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		die("socketpair");
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid > 0) {
		close(sv[1]);
		return sv[0];
	}
	close(sv[0]);
	setsid();
	signal(SIGINT, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	int listener = recvFd(sv[1]);
	if (listener < 0)
		_exit(0); /* nested: no listener of ours */
	close(sv[1]);
	serve(listener, countFile);
	_exit(0);
}

int main(int argc, char **argv)
{
	const char *traps = "bind,listen";
	const char *countFile = NULL;
	int i;

	for (i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
		if (strcmp(argv[i], "--trap") == 0 && i + 1 < argc)
			traps = argv[++i];
		else if (strcmp(argv[i], "--count") == 0 && i + 1 < argc)
			countFile = argv[++i];
		else
			usage("bad argument");
	}
	if (i + 1 >= argc)
		usage("no command after --");
	char **cmd = argv + i + 1;

	int nrs[MAXTRAP];
	int n = parseTraps(traps, nrs);
	if (countFile)
		writeCount(countFile, 0);
	struct handOver h = {.sock = startServer(countFile)};
	pthread_t th;
	if (pipe2(h.pipe, O_CLOEXEC) < 0)
		die("pipe");
	if ((errno = pthread_create(&th, NULL, handOverThread, &h)) != 0)
		die("pthread_create");
	/* The filter goes on this thread only (no TSYNC), which execs. */
	int listener = install(nrs, n);
	if (write(h.pipe[1], &listener, sizeof listener) != sizeof listener)
		die("write");
	if ((errno = pthread_join(th, NULL)) != 0)
		die("pthread_join");
	if (listener >= 0)
		close(listener);
	close(h.sock);
	execvp(cmd[0], cmd);
	fprintf(stderr, "parentlisten: exec %s: %s\n", cmd[0], strerror(errno));
	return 127;
}
