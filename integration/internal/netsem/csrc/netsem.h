/* netsem: the emulation-semantics scenarios (see ../doc.go). */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stddef.h>
#include <sys/socket.h>

#define LOOP4 "127.0.0.1"
#define LOOP6 "::1"

/* out prints one result line: "name: text". */
void out(const char *name, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* en names an errno ("ok" for 0). */
const char *en(int e);
/* rc names a call's outcome: its value when >= 0, else errno's name. */
const char *rc(long r);

/* An address of the family's loopback at port. */
socklen_t loaddr(int fam, int port, struct sockaddr_storage *sa);
int port_of(int fd);
/* A listening TCP socket on loopback (tfo: TCP_FASTOPEN queue length). */
int tcp_listener(int fam, int backlog, int tfo);
/* A TCP listener whose accept queue is full: connects to it hang. */
int full_listener(int fam);
/* A bound UDP socket on loopback. */
int udp_bound(int fam);
/* A port nobody listens on. */
int closed_port(int fam);
int nonblock(int fd, int on);
int set_sndtimeo(int fd, int ms);
int so_error(int fd);
/* Waits until fd has events, up to ms; returns revents. */
int wait_fd(int fd, int events, int ms);
/* Counts sockets in SYN_SENT to port (/proc/net/tcp*). */
int syn_sent_to(int port);
void msleep(int ms);
/* in_syscall waits (up to 10 s) until task tid of process pid is blocked
 * in system call nr, as /proc says, then 200 ms more (for the supervisor
 * to act on the call): a signal sent next meets the call, not the code
 * before it, however loaded the machine. */
void in_syscall(int pid, int tid, long nr);

void tcp_scenarios(void);
void signal_scenarios(void);
void stream_send_scenarios(void);
void udp_scenarios(void);
void thread_scenarios(void);
void unix_scenarios(void);
