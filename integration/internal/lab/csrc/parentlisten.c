/*
 * parentlisten: a seccomp listener above nettrap, as WSL2's init installs
 * one in mirrored networking mode (microsoft/WSL#9548).
 *
 *   parentlisten [--trap bind,listen] [--count FILE] -- argv...
 *
 * It sets no_new_privs and installs a filter with
 * SECCOMP_FILTER_FLAG_NEW_LISTENER that returns SECCOMP_RET_USER_NOTIF for
 * the listed native x86_64 syscalls (default bind and listen) and ALLOW
 * for everything else, i386 calls included (WSL does not care about them
 * either). It then forks: the child execs argv, so the whole tree it
 * starts inherits the filter, and a second listener below is refused
 * with EBUSY; the parent answers every notification with
 * SECCOMP_USER_NOTIF_FLAG_CONTINUE until the child exits, forwarding the
 * usual termination signals to it, and exits with the child's status
 * (128+signal when it was killed). With --count it writes the number of
 * notifications it answered to FILE at exit, so a test can prove that
 * the listener really trapped something.
 *
 * Under a listener already (EBUSY: one parentlisten started under
 * another, as nested nettraps of a test are), it execs argv as it is.
 *
 * The child dies with the parent (PR_SET_PDEATHSIG): without the
 * listener, the calls it traps would fail with ENOSYS, which no test
 * should mistake for a denial.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
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

static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

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
static int parseTraps(char *list, int *nrs)
{
	int n = 0;
	for (char *name = strtok(list, ","); name; name = strtok(NULL, ",")) {
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

/* answer receives one notification and lets the call go on; it returns 1
 * when it answered one. */
static int answer(int fd, struct seccomp_notif *req, struct seccomp_notif_resp *resp,
		  const struct seccomp_notif_sizes *sz)
{
	memset(req, 0, sz->seccomp_notif);
	if (ioctl(fd, SECCOMP_IOCTL_NOTIF_RECV, req) < 0) {
		/* ENOENT: the caller died (or was interrupted) before we read it. */
		if (errno == ENOENT || errno == EINTR)
			return 0;
		die("ioctl(SECCOMP_IOCTL_NOTIF_RECV)");
	}
	memset(resp, 0, sz->seccomp_notif_resp);
	resp->id = req->id;
	resp->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
	if (ioctl(fd, SECCOMP_IOCTL_NOTIF_SEND, resp) < 0 && errno != ENOENT)
		die("ioctl(SECCOMP_IOCTL_NOTIF_SEND)");
	return 1;
}

static pid_t start(char **argv, int listener, const sigset_t *old)
{
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid > 0)
		return pid;
	close(listener);
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || getppid() != parent)
		_exit(120);
	sigprocmask(SIG_SETMASK, old, NULL);
	execvp(argv[0], argv);
	fprintf(stderr, "parentlisten: exec %s: %s\n", argv[0], strerror(errno));
	_exit(127);
}

/* serve answers notifications until the child exits, and returns its
 * wait status. */
static int serve(int listener, int sfd, pid_t child, unsigned long *count)
{
	struct seccomp_notif_sizes sz;
	if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sz) < 0)
		die("seccomp(SECCOMP_GET_NOTIF_SIZES)");
	struct seccomp_notif *req = calloc(1, sz.seccomp_notif);
	struct seccomp_notif_resp *resp = calloc(1, sz.seccomp_notif_resp);
	if (!req || !resp)
		die("calloc");

	for (;;) {
		struct pollfd p[2] = {{.fd = listener, .events = POLLIN}, {.fd = sfd, .events = POLLIN}};
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			die("poll");
		}
		if (p[0].revents & POLLIN)
			*count += answer(listener, req, resp, &sz);
		if (!(p[1].revents & POLLIN))
			continue;
		struct signalfd_siginfo si;
		if (read(sfd, &si, sizeof si) != sizeof si)
			die("read(signalfd)");
		if (si.ssi_signo != SIGCHLD) {
			kill(child, si.ssi_signo);
			continue;
		}
		int status;
		pid_t w = waitpid(child, &status, WNOHANG);
		if (w < 0)
			die("waitpid");
		if (w == child)
			return status;
	}
}

int main(int argc, char **argv)
{
	char defaults[] = "bind,listen";
	char *traps = defaults;
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

	int nrs[MAXTRAP];
	int n = parseTraps(traps, nrs);

	/* Block what the signalfd reads before the child exists, so that no
	 * SIGCHLD or forwarded signal is lost. */
	sigset_t mask, old;
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	for (size_t s = 0; s < sizeof forwarded / sizeof forwarded[0]; s++)
		sigaddset(&mask, forwarded[s]);
	if (sigprocmask(SIG_BLOCK, &mask, &old) < 0)
		die("sigprocmask");
	int sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (sfd < 0)
		die("signalfd");

	int listener = install(nrs, n);
	if (listener < 0) {
		/* Nested (a test's go test -exec under its nettrap, both
		 * started so): the listener above is the one that counts.
		 * The filter was not installed; run the command as it is. */
		sigprocmask(SIG_SETMASK, &old, NULL);
		execvp(argv[i + 1], argv + i + 1);
		die(argv[i + 1]);
	}
	pid_t child = start(argv + i + 1, listener, &old);
	unsigned long count = 0;
	int status = serve(listener, sfd, child, &count);

	if (countFile) {
		FILE *f = fopen(countFile, "w");
		if (!f || fprintf(f, "%lu\n", count) < 0 || fclose(f) != 0)
			die(countFile);
	}
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}
