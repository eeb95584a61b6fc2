/* netsem: unix and netlink calls, and a stream send with an address
 * (issue 19: nettrap makes these itself too). Paths resolve against the
 * caller's working directory and with its credentials; a peer sees the
 * caller's uid and gid (not its pid: nettrap's, a known difference, not
 * printed). */
#include "netsem.h"

#include <linux/netlink.h>
#include <grp.h>
#include <linux/rtnetlink.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static socklen_t unaddr(struct sockaddr_un *a, const char *path, int abstract)
{
	memset(a, 0, sizeof *a);
	a->sun_family = AF_UNIX;
	if (abstract) {
		snprintf(a->sun_path + 1, sizeof a->sun_path - 1, "%s", path);
		return offsetof(struct sockaddr_un, sun_path) + 1 + strlen(path);
	}
	snprintf(a->sun_path, sizeof a->sun_path, "%s", path);
	return offsetof(struct sockaddr_un, sun_path) + strlen(path) + 1;
}

static int unix_bound(int type, const char *path, int abstract)
{
	struct sockaddr_un a;
	socklen_t n = unaddr(&a, path, abstract);
	int fd = socket(AF_UNIX, type, 0);
	if (fd < 0 || bind(fd, (void *)&a, n) < 0) {
		perror("netsem: unix bind");
		exit(2);
	}
	if (type == SOCK_STREAM && listen(fd, 16) < 0) {
		perror("netsem: listen");
		exit(2);
	}
	return fd;
}

static long unix_connect(const char *path, int abstract)
{
	struct sockaddr_un a;
	socklen_t n = unaddr(&a, path, abstract);
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (connect(fd, (void *)&a, n) < 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

/* peer says who connected to l: the uid and gid of SO_PEERCRED. */
static const char *peer(int l)
{
	static char buf[64];
	struct ucred cr;
	socklen_t n = sizeof cr;
	int c = accept(l, NULL, NULL);
	if (c < 0 || getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr, &n) < 0)
		return en(errno);
	close(c);
	snprintf(buf, sizeof buf, "uid=%d gid=%d", (int)cr.uid, (int)cr.gid);
	return buf;
}

/* dgram_recv says what r got: the payload, and the uid of a credentials
 * message (SO_PASSCRED) or of a passed descriptor's use. */
static const char *dgram_recv(int r)
{
	static char buf[128];
	char data[64] = "", cbuf[CMSG_SPACE(sizeof(struct ucred)) + CMSG_SPACE(4 * sizeof(int))];
	struct iovec iov = {data, sizeof data - 1};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf};
	if (!(wait_fd(r, POLLIN, 2000) & POLLIN))
		return "nothing";
	long n = recvmsg(r, &m, MSG_DONTWAIT);
	if (n < 0)
		return en(errno);
	data[n] = 0;
	snprintf(buf, sizeof buf, "%s", data);
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS) {
			struct ucred *cr = (void *)CMSG_DATA(c);
			snprintf(buf + strlen(buf), sizeof buf - strlen(buf), " cred uid=%d gid=%d", (int)cr->uid, (int)cr->gid);
		}
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
			/* The passed descriptor is a pipe's write end: write
			 * through it, and say whether the bytes came out. */
			int fd = *(int *)CMSG_DATA(c);
			long w = write(fd, "x", 1);
			snprintf(buf + strlen(buf), sizeof buf - strlen(buf), " fd %s", w == 1 ? "writes" : en(errno));
			close(fd);
		}
	}
	return buf;
}

static long send_rights(int s, const char *path, int fd)
{
	struct sockaddr_un a;
	socklen_t n = unaddr(&a, path, 0);
	char cbuf[CMSG_SPACE(sizeof(int))] = {0};
	struct iovec iov = {"rights", 6};
	struct msghdr m = {.msg_name = &a, .msg_namelen = n, .msg_iov = &iov, .msg_iovlen = 1,
			   .msg_control = cbuf, .msg_controllen = sizeof cbuf};
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET, c->cmsg_type = SCM_RIGHTS, c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof fd);
	return sendmsg(s, &m, 0);
}

static long sendto_path_flags(int s, const char *path, const char *msg, int flags)
{
	struct sockaddr_un a;
	socklen_t n = unaddr(&a, path, 0);
	return sendto(s, msg, strlen(msg), flags, (void *)&a, n);
}

static long sendto_path(int s, const char *path, const char *msg)
{
	return sendto_path_flags(s, path, msg, 0);
}

struct drain {
	int fd, n;
};

static void *drain_later(void *arg)
{
	struct drain *d = arg;
	char b[16];
	msleep(200);
	for (int i = 0; i < d->n; i++)
		recv(d->fd, b, sizeof b, 0);
	return NULL;
}

/* full_queue_rights: a blocking sendmsg with SCM_RIGHTS to a receiver
 * whose queue is full waits until it reads (under the ptrace engine
 * nettrap's first, non-blocking try fails and it makes the call again). */
static void full_queue_rights(int s)
{
	int q = unix_bound(SOCK_DGRAM, "q.sock", 0), p[2];
	struct drain d = {q, 0};
	while (sendto_path_flags(s, "q.sock", "fill", MSG_DONTWAIT) > 0)
		d.n++;
	if (pipe(p) < 0) {
		perror("netsem: pipe");
		exit(2);
	}
	pthread_t t;
	pthread_create(&t, NULL, drain_later, &d);
	out("unix_full_queue_rights", "%s", rc(send_rights(s, "q.sock", p[1])));
	pthread_join(t, NULL);
	out("unix_full_queue_rights_got", "%s", dgram_recv(q));
	char x;
	out("unix_full_queue_pipe", "%s", rc(read(p[0], &x, 1)));
	close(p[0]), close(p[1]), close(q);
	unlink("q.sock");
}

/* as_nobody runs the credential cases in a child that became uid and gid
 * 65534 (root only): a 0600 socket of root's refuses it, and the peers
 * see its ids. */
static void as_nobody(const char *dir)
{
	if (geteuid() != 0) {
		out("unix_nobody", "skipped: not root");
		return;
	}
	int priv = unix_bound(SOCK_STREAM, "priv.sock", 0);
	int open_ = unix_bound(SOCK_STREAM, "open.sock", 0);
	int d = unix_bound(SOCK_DGRAM, "cred.sock", 0), on = 1;
	chmod("priv.sock", 0600);
	chmod("open.sock", 0666);
	chmod("cred.sock", 0666);
	setsockopt(d, SOL_SOCKET, SO_PASSCRED, &on, sizeof on);
	pid_t pid = fork();
	if (pid == 0) {
		if (setgroups(0, NULL) || setgid(65534) || setuid(65534))
			_exit(3);
		long r = unix_connect("priv.sock", 0);
		out("unix_nobody_0600", "%s", rc(r < 0 ? r : 0));
		r = unix_connect("open.sock", 0);
		out("unix_nobody_0666", "%s", rc(r < 0 ? r : 0));
		int s = socket(AF_UNIX, SOCK_DGRAM, 0);
		out("unix_nobody_sendto", "%s", rc(sendto_path(s, "cred.sock", "from-nobody")));
		_exit(0);
	}
	int st;
	waitpid(pid, &st, 0);
	out("unix_nobody_exit", "%d", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	out("unix_nobody_peer", "%s", peer(open_));
	/* A caller in a chroot: "/open.sock" is the one in dir. */
	pid = fork();
	if (pid == 0) {
		if (chroot(".") || chdir("/"))
			_exit(3);
		long r = unix_connect("/open.sock", 0);
		out("unix_chroot_connect", "%s", rc(r < 0 ? r : 0));
		_exit(0);
	}
	waitpid(pid, &st, 0);
	out("unix_chroot_exit", "%d", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	out("unix_chroot_peer", "%s", peer(open_));
	out("unix_nobody_passcred", "%s", dgram_recv(d));
	close(priv), close(open_), close(d);
	unlink("priv.sock"), unlink("open.sock"), unlink("cred.sock");
	(void)dir;
}

static void unix_scenarios_in(const char *dir)
{
	char name[64];
	snprintf(name, sizeof name, "netsem-%d", (int)getpid());

	/* Stream connects: relative path, abstract name, missing path, a
	 * path with no listener. */
	int l = unix_bound(SOCK_STREAM, "s.sock", 0);
	long c = unix_connect("s.sock", 0);
	out("unix_connect_relative", "%s", rc(c < 0 ? c : 0));
	out("unix_peercred", "%s", peer(l));
	if (c >= 0)
		close(c);
	int la = unix_bound(SOCK_STREAM, name, 1);
	c = unix_connect(name, 1);
	out("unix_connect_abstract", "%s", rc(c < 0 ? c : 0));
	if (c >= 0)
		close(c);
	out("unix_connect_missing", "%s", rc(unix_connect("missing.sock", 0)));
	int dead = unix_bound(SOCK_DGRAM, "dead.sock", 0);
	out("unix_connect_stream_to_dgram", "%s", rc(unix_connect("dead.sock", 0)));
	close(dead);
	int nl = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un a;
	socklen_t an = unaddr(&a, "nolisten.sock", 0);
	bind(nl, (void *)&a, an);
	out("unix_connect_refused", "%s", rc(unix_connect("nolisten.sock", 0)));
	close(nl);

	/* Datagrams: to a relative path, with SO_PASSCRED, with SCM_RIGHTS
	 * over an unconnected socket, with a bad descriptor. */
	int d = unix_bound(SOCK_DGRAM, "d.sock", 0), on = 1;
	setsockopt(d, SOL_SOCKET, SO_PASSCRED, &on, sizeof on);
	int s = socket(AF_UNIX, SOCK_DGRAM, 0);
	out("unix_sendto_path", "%s", rc(sendto_path(s, "d.sock", "hello")));
	out("unix_sendto_path_got", "%s", dgram_recv(d));
	int p[2];
	if (pipe(p) < 0) {
		perror("netsem: pipe");
		exit(2);
	}
	out("unix_sendmsg_rights", "%s", rc(send_rights(s, "d.sock", p[1])));
	out("unix_sendmsg_rights_got", "%s", dgram_recv(d));
	char x;
	out("unix_rights_pipe", "%s", rc(read(p[0], &x, 1)));
	out("unix_sendmsg_badfd", "%s", rc(send_rights(s, "d.sock", 999)));
	out("unix_sendto_missing", "%s", rc(sendto_path(s, "missing.sock", "x")));
	full_queue_rights(s);
	close(p[0]), close(p[1]), close(s), close(d), close(l), close(la);
	unlink("s.sock"), unlink("d.sock"), unlink("dead.sock"), unlink("nolisten.sock");

	as_nobody(dir);
}

/* A send with an address on a TCP socket: a connected one ignores the
 * address, an unconnected one fails (EPIPE). */
static void stream_sendto(void)
{
	struct sockaddr_storage sa, other;
	int l = tcp_listener(AF_INET, 8, 0);
	socklen_t n = loaddr(AF_INET, port_of(l), &sa);
	loaddr(AF_INET, closed_port(AF_INET), &other);
	int c = socket(AF_INET, SOCK_STREAM, 0);
	if (connect(c, (void *)&sa, n) < 0) {
		perror("netsem: connect");
		exit(2);
	}
	out("tcp_sendto_addr_connected", "%s", rc(sendto(c, "abc", 3, 0, (void *)&other, n)));
	int a = accept(l, NULL, NULL);
	char buf[8] = "";
	wait_fd(a, POLLIN, 2000);
	out("tcp_sendto_addr_got", "%s", rc(recv(a, buf, sizeof buf, MSG_DONTWAIT)));
	int u = socket(AF_INET, SOCK_STREAM, 0);
	out("tcp_sendto_addr_unconnected", "%s", rc(sendto(u, "abc", 3, MSG_NOSIGNAL, (void *)&sa, n)));
	close(u), close(a), close(c), close(l);
}

/* A netlink request without an address (the kernel): a link dump. */
static void netlink_dump(void)
{
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	struct {
		struct nlmsghdr h;
		struct ifinfomsg i;
	} req = {{sizeof req, RTM_GETLINK, NLM_F_REQUEST | NLM_F_DUMP, 1, 0}, {.ifi_family = AF_UNSPEC}};
	struct iovec iov = {&req, sizeof req};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
	out("netlink_sendmsg", "%s", rc(sendmsg(fd, &m, 0)));
	static char buf[65536];
	wait_fd(fd, POLLIN, 2000);
	long r = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
	struct nlmsghdr *h = (void *)buf;
	out("netlink_reply", "%s", r < 0 ? en(errno) : h->nlmsg_type == RTM_NEWLINK ? "RTM_NEWLINK" : "other");
	close(fd);
}

void unix_scenarios(void)
{
	char dir[] = "/tmp/netsem-unix-XXXXXX", cwd[4096];
	if (!mkdtemp(dir) || chmod(dir, 0755) || !getcwd(cwd, sizeof cwd) || chdir(dir)) {
		perror("netsem: unix dir");
		exit(2);
	}
	unix_scenarios_in(dir);
	if (chdir(cwd) == 0)
		rmdir(dir);
	stream_sendto();
	netlink_dump();
}
