/* netsem: calls of several threads and processes at once. */
#include "netsem.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

struct slow {
	int l, timeo_ms;
	volatile int done, tid;
	char res[32];
	pthread_t th;
};

/* slow_connect: a blocking connect to a full accept queue, bounded by
 * SO_SNDTIMEO. */
static void *slow_connect(void *arg)
{
	struct slow *s = arg;
	struct sockaddr_storage sa;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	s->tid = syscall(SYS_gettid);
	set_sndtimeo(fd, s->timeo_ms);
	strcpy(s->res, rc(connect(fd, (struct sockaddr *)&sa, loaddr(AF_INET, port_of(s->l), &sa))));
	s->done = 1;
	close(fd);
	return NULL;
}

static void slow_start(struct slow *s, int timeo_ms)
{
	memset(s, 0, sizeof *s);
	s->l = full_listener(AF_INET), s->timeo_ms = timeo_ms;
	pthread_create(&s->th, NULL, slow_connect, s);
	msleep(100);
}

/* A slow call does not stall another thread's connect. */
static void slow_and_fast(void)
{
	struct slow s;
	slow_start(&s, 1500);
	int l = tcp_listener(AF_INET, 4, 0);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_storage sa;
	char fast[32];
	strcpy(fast, rc(connect(fd, (struct sockaddr *)&sa, loaddr(AF_INET, port_of(l), &sa))));
	int before = !s.done;
	pthread_join(s.th, NULL);
	out("slow-and-fast", "fast=%s while-slow-waits=%d slow=%s", fast, before, s.res);
	close(fd);
	close(l);
	close(s.l);
}

/* tell: where a thread blocked in connect waits. Bare and with
 * --emulate=off it is the kernel's connect; emulated, the seccomp wait. */
static void tell(void)
{
	struct slow s;
	slow_start(&s, 600);
	char path[64], wchan[64] = "";
	snprintf(path, sizeof path, "/proc/self/task/%d/wchan", s.tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		long n = read(fd, wchan, sizeof wchan - 1);
		wchan[n > 0 ? n : 0] = 0;
		close(fd);
	}
	pthread_join(s.th, NULL);
	out("tell", "wchan=%s", wchan);
	close(s.l);
}

/* A process killed in the middle of a blocking connect: its socket goes
 * (no connect is left pending to the port), and the next connect works. */
static void killed(void)
{
	int l = full_listener(AF_INET), port = port_of(l);
	int pending = syn_sent_to(port);
	pid_t p = fork();
	if (p == 0) {
		struct sockaddr_storage sa;
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		connect(fd, (struct sockaddr *)&sa, loaddr(AF_INET, port, &sa));
		_exit(0);
	}
	in_syscall(p, p, SYS_connect);
	int during = syn_sent_to(port) - pending;
	kill(p, SIGKILL);
	int st;
	waitpid(p, &st, 0);
	int left = -1;
	for (int i = 0; i < 100 && (left = syn_sent_to(port) - pending) > 0; i++)
		msleep(20);
	int l2 = tcp_listener(AF_INET, 4, 0);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_storage sa;
	out("killed-mid-connect", "killed=%d during=%d left=%d next=%s",
	    WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, during, left,
	    rc(connect(fd, (struct sockaddr *)&sa, loaddr(AF_INET, port_of(l2), &sa))));
	close(fd);
	close(l2);
	close(l);
}

void thread_scenarios(void)
{
	slow_and_fast();
	killed();
	tell();
}
