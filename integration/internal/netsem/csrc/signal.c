/* netsem: signals during and after connects and sends. */
#include "netsem.h"

#include <pthread.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t hits;

static void on_sig(int sig) { (void)sig; hits++; }

static void handle(int sig, int restart)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_sig;
	sa.sa_flags = restart ? SA_RESTART : 0;
	sigaction(sig, &sa, NULL);
	hits = 0;
}

static void alarm_ms(int ms)
{
	struct itimerval it = {{0, 0}, {ms / 1000, (ms % 1000) * 1000}};
	setitimer(ITIMER_REAL, &it, NULL);
}

/* drainer accepts from a listener from after ms on, so that a connect
 * stuck behind a full accept queue completes (at its SYN retransmit). */
struct drainer {
	int l, ms;
	volatile int stop;
	pthread_t th;
};

static void *drain(void *arg)
{
	struct drainer *d = arg;
	for (int t = 0; t < d->ms && !d->stop; t += 20)
		msleep(20);
	nonblock(d->l, 1);
	while (!d->stop) {
		int c = accept(d->l, NULL, NULL);
		if (c >= 0)
			close(c);
		else
			msleep(20);
	}
	return NULL;
}

static void drain_start(struct drainer *d, int l, int ms)
{
	d->l = l, d->ms = ms, d->stop = 0;
	pthread_create(&d->th, NULL, drain, d);
}

static void drain_stop(struct drainer *d)
{
	d->stop = 1;
	pthread_join(d->th, NULL);
}

static long conn(int fd, int fam, int port)
{
	struct sockaddr_storage sa;
	return connect(fd, (struct sockaddr *)&sa, loaddr(fam, port, &sa));
}

/* A signal with a handler interrupts a blocking connect: without
 * SA_RESTART (EINTR), with SO_SNDTIMEO (EINTR), with SA_RESTART and no
 * timeout (the connect resumes and completes once the queue drains). A
 * connect again on the interrupted socket finds it still connecting. The
 * drainer only bounds a run where the signal did not interrupt. */
static void interrupted(const char *name, int restart, int timeo_ms, int drain_ms)
{
	int l = full_listener(AF_INET);
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct drainer d;
	if (timeo_ms)
		set_sndtimeo(s, timeo_ms);
	handle(SIGALRM, restart);
	drain_start(&d, l, drain_ms);
	alarm_ms(200);
	char first[32];
	strcpy(first, rc(conn(s, AF_INET, port_of(l))));
	int h = hits;
	char again[32] = "-";
	if (!restart) {
		set_sndtimeo(s, 100);
		strcpy(again, rc(conn(s, AF_INET, port_of(l))));
	}
	drain_stop(&d);
	out(name, "%s handler=%d again=%s", first, h, again);
	signal(SIGALRM, SIG_DFL);
	close(s);
	close(l);
}

/* A worker thread in a blocking connect, and a signal: thread-directed
 * to the worker (pthread_kill: EINTR), or process-directed with the main
 * thread taking it (the worker's connect goes on and completes once the
 * queue drains). */
struct worker {
	int l;
	volatile pid_t tid;
	char res[32];
	pthread_t th;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	w->tid = (pid_t)syscall(SYS_gettid);
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	strcpy(w->res, rc(conn(s, AF_INET, port_of(w->l))));
	close(s);
	return NULL;
}

static void in_worker(const char *name, int directed)
{
	struct worker w = {.l = full_listener(AF_INET)};
	struct drainer d;
	handle(SIGUSR1, 0);
	drain_start(&d, w.l, directed ? 3000 : 300);
	pthread_create(&w.th, NULL, work, &w);
	while (!w.tid)
		msleep(1);
	in_syscall(getpid(), w.tid, SYS_connect);
	if (directed)
		pthread_kill(w.th, SIGUSR1);
	else
		kill(getpid(), SIGUSR1);
	pthread_join(w.th, NULL);
	drain_stop(&d);
	out(name, "%s handler=%d", w.res, hits);
	signal(SIGUSR1, SIG_DFL);
	close(w.l);
}

/* SIGSTOP and SIGCONT while a child process waits in a connect with
 * SO_SNDTIMEO: EINTR, with no handler at all (signal(7)). */
static void stopped(void)
{
	int l = full_listener(AF_INET);
	pid_t p = fork();
	if (p == 0) {
		int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		set_sndtimeo(s, 3000);
		out("stop-cont-sndtimeo", "%s", rc(conn(s, AF_INET, port_of(l))));
		_exit(0);
	}
	in_syscall(p, p, SYS_connect);
	kill(p, SIGSTOP);
	msleep(100);
	kill(p, SIGCONT);
	waitpid(p, NULL, 0);
	close(l);
}

/* A connected pair whose peer has closed with unread data: the client
 * got a reset. */
static int reset_client(void)
{
	int l = tcp_listener(AF_INET, 4, 0);
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (conn(s, AF_INET, port_of(l)) < 0)
		return -1;
	int a = accept(l, NULL, NULL);
	send(s, "x", 1, 0);
	msleep(50);
	close(a);
	close(l);
	msleep(50);
	return s;
}

static long sendmsg1(int s, int flags)
{
	struct iovec iov = {"y", 1};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
	return sendmsg(s, &m, flags);
}

/* EPIPE with and without MSG_NOSIGNAL on a reset connection (a handler
 * counts SIGPIPE), and a process killed by the default action. */
static void sigpipe(void)
{
	handle(SIGPIPE, 0);
	int s = reset_client();
	char first[32];
	char then[32];
	strcpy(first, rc(sendmsg1(s, MSG_NOSIGNAL)));
	strcpy(then, rc(sendmsg1(s, MSG_NOSIGNAL)));
	out("epipe-nosignal", "%s then=%s sigpipe=%d", first, then, hits);
	close(s);
	hits = 0;
	s = reset_client();
	strcpy(first, rc(sendmsg1(s, 0)));
	strcpy(then, rc(sendmsg1(s, 0)));
	out("epipe-signal", "%s then=%s sigpipe=%d", first, then, hits);
	close(s);
	signal(SIGPIPE, SIG_DFL);
	s = reset_client();
	pid_t p = fork();
	if (p == 0) {
		sendmsg1(s, 0);
		sendmsg1(s, 0);
		_exit(0);
	}
	int st;
	waitpid(p, &st, 0);
	out("epipe-default", "signaled=%d sig=%s", WIFSIGNALED(st),
	    WIFSIGNALED(st) ? sigabbrev_np(WTERMSIG(st)) : "-");
	close(s);
}

/* An empty TCP Fast Open send on a socket shut for writing before it
 * connects: it connects, then fails with EPIPE (emulated, nettrap must
 * raise the SIGPIPE the kernel would). */
static void tfo_shut(int flags, const char *name)
{
	int l = tcp_listener(AF_INET, 4, 16);
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_storage sa;
	handle(SIGPIPE, 0);
	char shut[32];
	strcpy(shut, rc(shutdown(s, SHUT_WR)));
	long r = sendto(s, "", 0, MSG_FASTOPEN | flags, (struct sockaddr *)&sa,
			loaddr(AF_INET, port_of(l), &sa));
	int h = hits;
	out(name, "shutdown=%s send=%s sigpipe=%d", shut, rc(r), h);
	signal(SIGPIPE, SIG_DFL);
	close(s);
	close(l);
}

void signal_scenarios(void)
{
	interrupted("eintr", 0, 0, 3000);
	interrupted("eintr-sndtimeo", 1, 5000, 3000);
	interrupted("restart", 1, 0, 300);
	in_worker("signal-to-worker", 1);
	in_worker("signal-to-main", 0);
	stopped();
	sigpipe();
	tfo_shut(0, "tfo-shut-signal");
	tfo_shut(MSG_NOSIGNAL, "tfo-shut-nosignal");
}
