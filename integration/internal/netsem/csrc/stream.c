/* netsem: TCP Fast Open sends (the stream sends nettrap emulates) and
 * sendmsg on a connected stream (which continues in the kernel). */
#include "netsem.h"

#include <pthread.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

/* reader accepts one connection and reads it to EOF (or until want). */
struct reader {
	int l;
	long want, got;
	char head[16];
	pthread_t th;
};

static void *read_all(void *arg)
{
	struct reader *r = arg;
	int a = accept(r->l, NULL, NULL);
	char buf[65536];
	long n;
	if (a < 0)
		return NULL;
	while (r->got < r->want && (n = read(a, buf, sizeof buf)) > 0) {
		if (r->got < (long)sizeof r->head - 1)
			memcpy(r->head + r->got, buf, n < (long)sizeof r->head - 1 - r->got ? n : (long)sizeof r->head - 1 - r->got);
		r->got += n;
	}
	close(a);
	return NULL;
}

static void reader_start(struct reader *r, int l, long want)
{
	memset(r, 0, sizeof *r);
	r->l = l, r->want = want;
	pthread_create(&r->th, NULL, read_all, r);
}

static long tfo_sendto(int s, const void *p, size_t n, int flags, int port)
{
	struct sockaddr_storage sa;
	return sendto(s, p, n, MSG_FASTOPEN | flags, (struct sockaddr *)&sa, loaddr(AF_INET, port, &sa));
}

static int tcp(int nb)
{
	return socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | (nb ? SOCK_NONBLOCK : 0), 0);
}

/* One blocking TFO send of n bytes, read by the peer. */
static void tfo_whole(const char *name, long n)
{
	int l = tcp_listener(AF_INET, 4, 16), s = tcp(0);
	char *p = malloc(n);
	struct reader r;
	memset(p, 'a', n);
	memcpy(p, "hello", n < 5 ? n : 5);
	reader_start(&r, l, n);
	char res[32];
	strcpy(res, rc(tfo_sendto(s, p, n, 0, port_of(l))));
	pthread_join(r.th, NULL);
	r.head[n < 5 ? n : 5] = 0;
	out(name, "%s peer=%ld head=%s", res, r.got, r.head);
	free(p);
	close(s);
	close(l);
}

/* sendmsg with MSG_FASTOPEN and iovcnt vectors of 8 bytes. */
static void tfo_iov(const char *name, int iovcnt)
{
	int l = tcp_listener(AF_INET, 4, 16), s = tcp(0);
	struct iovec *iov = calloc(iovcnt, sizeof *iov);
	struct sockaddr_storage sa;
	static char chunk[8] = "01234567";
	for (int i = 0; i < iovcnt; i++)
		iov[i] = (struct iovec){chunk, 8};
	struct msghdr m = {.msg_name = &sa, .msg_namelen = loaddr(AF_INET, port_of(l), &sa),
			   .msg_iov = iov, .msg_iovlen = iovcnt};
	struct reader r;
	reader_start(&r, l, 8L * iovcnt);
	char res[32];
	strcpy(res, rc(sendmsg(s, &m, MSG_FASTOPEN)));
	if (res[0] == 'E') /* nothing connected: stop the reader */
		close(s), s = tcp(0), connect(s, (struct sockaddr *)&sa, m.msg_namelen);
	close(s);
	pthread_join(r.th, NULL);
	out(name, "%s peer=%ld", res, r.got);
	free(iov);
	close(l);
}

/* Non-blocking (or MSG_DONTWAIT) TFO send of 1 MiB: a part goes in the
 * SYN (or EINPROGRESS); then the connection completes. How much fits in
 * the SYN depends on the sending thread's page fragment (the kernel's
 * task_frag), so only "partial" is compared. */
static void tfo_nonblock(const char *name, int nb, int flags)
{
	int l = tcp_listener(AF_INET, 4, 16), s = tcp(nb);
	long n = 1 << 20;
	char *p = calloc(1, n);
	char res[32];
	long r = tfo_sendto(s, p, n, flags, port_of(l));
	if (r > 0 && r < n)
		strcpy(res, "partial");
	else
		strcpy(res, rc(r));
	int ev = wait_fd(s, POLLOUT, 5000);
	out(name, "%s pollout=%d so_error=%s", res, !!(ev & POLLOUT), en(so_error(s)));
	free(p);
	close(s);
	close(l);
}

/* A blocking TFO send larger than the buffers to a peer that never reads,
 * bounded by SO_SNDTIMEO: a partial count. */
static void tfo_partial(void)
{
	int l = tcp_listener(AF_INET, 4, 16), s = tcp(0);
	long n = 32L << 20;
	char *p = calloc(1, n);
	set_sndtimeo(s, 300);
	long r = tfo_sendto(s, p, n, 0, port_of(l));
	out("tfo-partial", "partial=%d errno=%s", r > 0 && r < n, r < 0 ? en(errno) : "-");
	free(p);
	close(s);
	close(l);
}

/* sendmsg with MSG_DONTWAIT on a connected stream whose peer never reads:
 * EAGAIN once the buffers are full. */
static void dontwait(void)
{
	int l = tcp_listener(AF_INET, 4, 0), s = tcp(0);
	struct sockaddr_storage sa;
	connect(s, (struct sockaddr *)&sa, loaddr(AF_INET, port_of(l), &sa));
	static char chunk[65536];
	struct iovec iov = {chunk, sizeof chunk};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
	long r, total = 0;
	for (int i = 0; i < 100000 && (r = sendmsg(s, &m, MSG_DONTWAIT)) > 0; i++)
		total += r;
	out("stream-dontwait", "%s sent>0=%d", en(errno), total > 0);
	close(s);
	close(l);
}

void stream_send_scenarios(void)
{
	tfo_whole("tfo-sendto", 5);
	tfo_whole("tfo-64k", 65536);
	tfo_iov("tfo-sendmsg-iov1024", 1024);
	tfo_iov("tfo-sendmsg-iov1025", 1025);
	tfo_nonblock("tfo-nonblock", 1, 0);
	tfo_nonblock("tfo-dontwait", 0, MSG_DONTWAIT);
	tfo_partial();
	dontwait();
}
