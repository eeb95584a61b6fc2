// cfloor: the minimal seccomp user-notification supervisor the benchmarks
// weigh nettrap against (issue 10). It traps what nettrap traps on the
// benchmark's paths (connect, sendto with an address, sendmsg, sendmmsg),
// blocks in SECCOMP_IOCTL_NOTIF_RECV, reads the sockaddr with
// process_vm_readv, checks the notification with ID_VALID and answers
// CONTINUE; with -e it emulates the call instead, as nettrap does by
// default: pidfd_getfd of the target's socket (the thread's pidfd cached),
// the payload read with process_vm_readv, the call made here, close.
//
//	cfloor [-e] [-n] [-p] [-s USEC] [-w] COMMAND [ARGS...]
//
//	-e       emulate connect, sendto and sendmsg (sendmmsg continues)
//	-n       do not ask for SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
//	-p       poll() the listener before each RECV
//	-s USEC  before blocking, poll the listener without waiting for up to
//	         USEC microseconds (a bounded spin)
//	-w       trap bind and listen only, and let them continue, as WSL2's
//	         init does in mirrored networking mode: a listener above
//	         nettrap, which then falls back to its ptrace engine (not
//	         with -e)
//
// Exit status: the command's, or 125 when it cannot confine. Built by
// package bench with the system C compiler, for x86-64 or arm64 (calls of
// another ABI, such as i386 on x86-64, are let through untrapped).
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
#define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (1UL << 0)
#endif
#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS SECCOMP_IOW(4, __u64)
#endif
#ifndef SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
#define SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (1UL << 5)
#endif
#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL
#endif
#define EXIT_CANT 125

#if defined(__x86_64__)
#define NATIVE_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define NATIVE_ARCH AUDIT_ARCH_AARCH64
#else
#error "cfloor: x86-64 or arm64 only"
#endif

static int opt_emulate, opt_nosync, opt_poll, opt_wsl;
static long opt_spin_us;
static volatile sig_atomic_t child_exited;

#define ARG_LO(i) (offsetof(struct seccomp_data, args) + 8 * (i))
#define ARG_HI(i) (ARG_LO(i) + 4)

static struct sock_filter filter[] = {
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NATIVE_ARCH, 1, 0),
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_connect, 6, 0),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_sendmsg, 5, 0),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_sendmmsg, 4, 0),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_sendto, 0, 2),
	// sendto: trapped only when it names an address (args[4] != NULL).
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(4)),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 2, 1),
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_HI(4)),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 1),
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
};

// wsl_filter is -w's: bind and listen go to the listener, which lets them
// continue; nothing else does.
static struct sock_filter wsl_filter[] = {
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NATIVE_ARCH, 1, 0),
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_bind, 2, 0),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_listen, 1, 0),
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
};

static void die(const char *what) {
	fprintf(stderr, "cfloor: %s: %s\n", what, strerror(errno));
	exit(EXIT_CANT);
}

// readmem copies n bytes at addr of tid into buf: 0, or -1 (EFAULT).
static int readmem(pid_t tid, void *buf, uint64_t addr, size_t n) {
	if (n == 0)
		return 0;
	struct iovec l = {buf, n}, r = {(void *)addr, n};
	return process_vm_readv(tid, &l, 1, &r, 1, 0) == (ssize_t)n ? 0 : -1;
}

static int id_valid(int listener, uint64_t id) {
	return ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == 0;
}

// A pidfd per thread, kept: a pidfd names its task for good, and a
// failing pidfd_getfd (the task is gone) drops it.
#define NPIDFD 256
static struct { pid_t tid; int fd; } pidfds[NPIDFD];

static int pidfd_of(int listener, pid_t tid, uint64_t id) {
	unsigned slot = (unsigned)tid % NPIDFD;
	if (pidfds[slot].tid == tid && pidfds[slot].fd > 0)
		return pidfds[slot].fd;
	int fd = syscall(SYS_pidfd_open, tid, PIDFD_THREAD);
	if (fd < 0)
		return -1;
	if (!id_valid(listener, id)) { // the tid may name another task by now
		close(fd);
		return -1;
	}
	if (pidfds[slot].fd > 0)
		close(pidfds[slot].fd);
	pidfds[slot].tid = tid, pidfds[slot].fd = fd;
	return fd;
}

static int borrow(int listener, pid_t tid, uint64_t id, int targetfd) {
	int pidfd = pidfd_of(listener, tid, id);
	if (pidfd < 0)
		return -1;
	int fd = syscall(SYS_pidfd_getfd, pidfd, targetfd, 0);
	if (fd < 0) {
		unsigned slot = (unsigned)tid % NPIDFD;
		close(pidfds[slot].fd);
		pidfds[slot].fd = 0, pidfds[slot].tid = 0;
	}
	return fd;
}

struct answer { int64_t val; int32_t error; int cont; };

#define MAXPAYLOAD 65536
#define MAXIOV 64
#define MAXCTL 4096
static char payload[MAXPAYLOAD], ctl[MAXCTL];

// handle reads the call's address (and, emulating, its payload), checks
// the notification and answers.
static struct answer handle(int listener, struct seccomp_notif *n) {
	struct answer a = {0, 0, 1};
	const __u64 *arg = n->data.args;
	struct sockaddr_storage ss;
	socklen_t alen = 0;
	struct msghdr mh = {0};
	struct iovec riov[MAXIOV], liov;
	size_t plen = 0;
	int fail = 0;
	switch (n->data.nr) {
	case __NR_connect:
	case __NR_sendto: {
		int i = n->data.nr == __NR_connect ? 1 : 4;
		alen = (socklen_t)arg[i + 1];
		if (alen > sizeof ss || readmem(n->pid, &ss, arg[i], alen))
			fail = 1;
		if (!fail && opt_emulate && n->data.nr == __NR_sendto) {
			plen = arg[2] < MAXPAYLOAD ? arg[2] : MAXPAYLOAD;
			fail = readmem(n->pid, payload, arg[1], plen);
		}
		break;
	}
	case __NR_sendmsg: {
		struct msghdr th;
		if (readmem(n->pid, &th, arg[1], sizeof th)) {
			fail = 1;
			break;
		}
		alen = th.msg_namelen > sizeof ss ? sizeof ss : th.msg_namelen;
		if (th.msg_name && alen && readmem(n->pid, &ss, (uint64_t)th.msg_name, alen))
			fail = 1;
		if (fail || !opt_emulate)
			break;
		size_t niov = th.msg_iovlen < MAXIOV ? th.msg_iovlen : MAXIOV;
		size_t clen = th.msg_controllen < MAXCTL ? th.msg_controllen : MAXCTL;
		if (readmem(n->pid, riov, (uint64_t)th.msg_iov, niov * sizeof riov[0]) ||
		    readmem(n->pid, ctl, (uint64_t)th.msg_control, clen)) {
			fail = 1;
			break;
		}
		for (size_t k = 0; k < niov; k++)
			plen += riov[k].iov_len;
		if (plen > MAXPAYLOAD)
			plen = MAXPAYLOAD;
		liov.iov_base = payload, liov.iov_len = plen;
		if (plen && process_vm_readv(n->pid, &liov, 1, riov, niov, 0) < 0)
			fail = 1;
		mh.msg_name = th.msg_name ? &ss : NULL;
		mh.msg_namelen = th.msg_name ? alen : 0;
		mh.msg_iov = &liov, mh.msg_iovlen = 1;
		mh.msg_control = clen ? ctl : NULL, mh.msg_controllen = clen;
		break;
	}
	}
	if (!id_valid(listener, n->id))
		return (struct answer){0, -ENOENT, 0};
	if (fail)
		return (struct answer){0, -EFAULT, 0};
	if (!opt_emulate || n->data.nr == __NR_sendmmsg)
		return a;
	int fd = borrow(listener, n->pid, n->id, (int)arg[0]);
	if (fd < 0)
		return (struct answer){0, -EBADF, 0};
	long r;
	switch (n->data.nr) {
	case __NR_connect:
		r = connect(fd, (struct sockaddr *)&ss, alen);
		break;
	case __NR_sendto:
		r = sendto(fd, payload, plen, (int)arg[3] | MSG_NOSIGNAL, (struct sockaddr *)&ss, alen);
		break;
	default:
		r = sendmsg(fd, &mh, (int)arg[2] | MSG_NOSIGNAL);
	}
	a.cont = 0;
	if (r < 0)
		a.error = -errno;
	else
		a.val = r;
	close(fd);
	return a;
}

static long now_us(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000L + t.tv_nsec / 1000;
}

// wait_ready spins (-s) and polls (-p) as asked before the RECV.
static void wait_ready(int listener) {
	struct pollfd p = {listener, POLLIN, 0};
	if (opt_spin_us > 0) {
		long until = now_us() + opt_spin_us;
		do {
			if (poll(&p, 1, 0) > 0)
				return;
		} while (now_us() < until);
	}
	if (opt_poll)
		poll(&p, 1, -1);
}

static void serve(int listener, pid_t child) {
	struct seccomp_notif n;
	struct seccomp_notif_resp resp;
	for (;;) {
		siginfo_t si = {0};
		if (child_exited && waitid(P_PID, child, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == child)
			return; // reaped by main
		wait_ready(listener);
		memset(&n, 0, sizeof n);
		if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &n) < 0) {
			// ENOENT: the target left the call, or (6.6+) the filter
			// has no user left. EINTR: SIGCHLD.
			if (errno == ENOENT || errno == EINTR)
				continue;
			die("ioctl(SECCOMP_IOCTL_NOTIF_RECV)");
		}
		struct answer a = handle(listener, &n);
		if (a.error == -ENOENT && !a.cont)
			continue; // gone
		memset(&resp, 0, sizeof resp);
		resp.id = n.id, resp.val = a.val, resp.error = a.error;
		resp.flags = a.cont ? SECCOMP_USER_NOTIF_FLAG_CONTINUE : 0;
		if (ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp) < 0 && errno != ENOENT)
			die("ioctl(SECCOMP_IOCTL_NOTIF_SEND)");
	}
}

static void on_child(int sig) { (void)sig; child_exited = 1; }

// start forks the command; the child installs the filter and parks until
// the parent has taken its listener (pidfd_getfd) and set its flags.
static pid_t start(char **argv, int *listener) {
	int up[2], down[2];
	if (pipe2(up, O_CLOEXEC) || pipe2(down, O_CLOEXEC))
		die("pipe2");
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		struct sock_fprog prog = {sizeof filter / sizeof filter[0], filter};
		if (opt_wsl)
			prog = (struct sock_fprog){sizeof wsl_filter / sizeof wsl_filter[0], wsl_filter};
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
			die("prctl(PR_SET_NO_NEW_PRIVS)");
		int fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
		                 SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV, &prog);
		if (fd < 0)
			die("seccomp");
		char c;
		if (write(up[1], &fd, sizeof fd) != sizeof fd || read(down[0], &c, 1) != 1)
			_exit(EXIT_CANT);
		close(fd);
		execvp(argv[0], argv);
		die(argv[0]);
	}
	int remote;
	if (read(up[0], &remote, sizeof remote) != sizeof remote) {
		fprintf(stderr, "cfloor: the child could not install the filter\n");
		exit(EXIT_CANT);
	}
	int pidfd = syscall(SYS_pidfd_open, pid, 0);
	if (pidfd < 0 || (*listener = syscall(SYS_pidfd_getfd, pidfd, remote, 0)) < 0)
		die("pidfd_getfd");
	close(pidfd);
	if (!opt_nosync && ioctl(*listener, SECCOMP_IOCTL_NOTIF_SET_FLAGS, SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP) < 0)
		die("ioctl(SECCOMP_IOCTL_NOTIF_SET_FLAGS)");
	if (write(down[1], "g", 1) != 1)
		die("write");
	return pid;
}

int main(int argc, char **argv) {
	int c;
	while ((c = getopt(argc, argv, "+enps:w")) != -1) {
		switch (c) {
		case 'e': opt_emulate = 1; break;
		case 'n': opt_nosync = 1; break;
		case 'p': opt_poll = 1; break;
		case 's': opt_spin_us = atol(optarg); break;
		case 'w': opt_wsl = 1; break;
		default:
			fprintf(stderr, "usage: cfloor [-e] [-n] [-p] [-s USEC] [-w] COMMAND [ARGS...]\n");
			return EXIT_CANT;
		}
	}
	if (optind >= argc || (opt_wsl && opt_emulate)) {
		fprintf(stderr, "usage: cfloor [-e] [-n] [-p] [-s USEC] [-w] COMMAND [ARGS...] (not -e with -w)\n");
		return EXIT_CANT;
	}
	// SIGCHLD without SA_RESTART: it interrupts a blocked RECV, which
	// before 6.6 would not return when the last target is gone.
	struct sigaction sa = {0};
	sa.sa_handler = on_child;
	sigaction(SIGCHLD, &sa, NULL);
	int listener;
	pid_t pid = start(argv + optind, &listener);
	serve(listener, pid);
	int st;
	if (waitpid(pid, &st, 0) < 0)
		die("waitpid");
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
