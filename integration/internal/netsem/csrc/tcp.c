/* netsem: connect scenarios. */
#include "netsem.h"

#include <poll.h>
#include <string.h>
#include <unistd.h>

static const char *fname(int fam) { return fam == AF_INET ? "4" : "6"; }

static int tcp_socket(int fam, int nb)
{
	return socket(fam, SOCK_STREAM | SOCK_CLOEXEC | (nb ? SOCK_NONBLOCK : 0), 0);
}

static long conn(int fd, int fam, int port)
{
	struct sockaddr_storage sa;
	return connect(fd, (struct sockaddr *)&sa, loaddr(fam, port, &sa));
}

/* Blocking connect, then connect again. */
static void connect_block(int fam)
{
	int l = tcp_listener(fam, 8, 0), s = tcp_socket(fam, 0);
	const char *first = rc(conn(s, fam, port_of(l)));
	char name[32] = "connect-block";
	strcat(name, fname(fam));
	out(name, "%s again=%s", first, rc(conn(s, fam, port_of(l))));
	close(s);
	close(l);
}

/* Non-blocking connect: EINPROGRESS, completion seen by poll and SO_ERROR,
 * then EISCONN. */
static void connect_nonblock(int fam)
{
	int l = tcp_listener(fam, 8, 0), s = tcp_socket(fam, 1);
	char first[32], name[32] = "connect-nonblock";
	strcat(name, fname(fam));
	strcpy(first, rc(conn(s, fam, port_of(l))));
	int ev = wait_fd(s, POLLOUT, 5000);
	out(name, "%s pollout=%d so_error=%s again=%s", first, !!(ev & POLLOUT), en(so_error(s)),
	    rc(conn(s, fam, port_of(l))));
	close(s);
	close(l);
}

/* A second connect while the first is in progress: EALREADY. */
static void connect_ealready(int fam)
{
	int l = full_listener(fam), s = tcp_socket(fam, 1);
	char first[32], name[32] = "connect-ealready";
	strcat(name, fname(fam));
	strcpy(first, rc(conn(s, fam, port_of(l))));
	out(name, "%s again=%s", first, rc(conn(s, fam, port_of(l))));
	close(s);
	close(l);
}

/* A closed port, blocking and not. */
static void refused(int fam)
{
	int p = closed_port(fam), s = tcp_socket(fam, 0);
	char name[32] = "refused-block";
	strcat(name, fname(fam));
	out(name, "%s", rc(conn(s, fam, p)));
	close(s);
	s = tcp_socket(fam, 1);
	char first[32];
	strcpy(first, rc(conn(s, fam, p)));
	int ev = wait_fd(s, POLLOUT, 5000);
	strcpy(name, "refused-nonblock");
	strcat(name, fname(fam));
	out(name, "%s pollerr=%d so_error=%s", first, !!(ev & POLLERR), en(so_error(s)));
	close(s);
}

/* SO_SNDTIMEO bounds a blocking connect to a full accept queue; a second
 * connect on the socket still connecting waits again and times out too. */
static void timeout(int fam)
{
	int l = full_listener(fam), s = tcp_socket(fam, 0);
	char first[32], name[32] = "connect-timeout";
	strcat(name, fname(fam));
	set_sndtimeo(s, 200);
	strcpy(first, rc(conn(s, fam, port_of(l))));
	out(name, "%s again=%s", first, rc(conn(s, fam, port_of(l))));
	close(s);
	close(l);
}

void tcp_scenarios(void)
{
	int fams[] = {AF_INET, AF_INET6};
	for (int i = 0; i < 2; i++) {
		connect_block(fams[i]);
		connect_nonblock(fams[i]);
		connect_ealready(fams[i]);
		refused(fams[i]);
		timeout(fams[i]);
	}
}
