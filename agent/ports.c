/*
 * The ports service (docs/PROTOCOL.md section 12): a tunnel from the host to a
 * TCP port on the guest's loopback, so a server started in the sandbox is
 * reachable from the host without any guest network. PORT_OPEN connects to
 * 127.0.0.1:port (then [::1]:port); PORT_DATA carries bytes both ways and
 * `eof` half-closes a direction. Each direction has a window: a side sends
 * at most CV_PORT_WINDOW bytes the other has not acknowledged (`ack`), so the
 * agent never queues more than that per tunnel toward the guest, and stops
 * reading the guest's socket (EPOLLIN off) while the host is behind. The
 * terminal OK comes once both directions ended.
 */

#include "ports.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cbor_util.h"
#include "conn.h"
#include "log.h"
#include "loop.h"
#include "msgtypes.h"
#include "port_data.h"
#include "svc.h"
#include "writer.h"

/* Bytes read from the guest per PORT_DATA. */
#define PORT_READ_CHUNK (64u * 1024u)
/* Tunnels one connection may hold open. */
#define PORT_MAX_TUNNELS 256u

struct tunnel {
        struct svc_req r;
        struct watch w;
        uint16_t port;
        bool egress;              /* a guest's egress stream (egress.c): accepted, not connected */
        bool v6;                  /* connecting or connected to [::1] */
        bool open;                /* connected (PORT_OPENED sent) */
        struct cv_buf to_guest;   /* the host's bytes not yet written, <= CV_PORT_WINDOW */
        uint64_t written_unacked; /* written to the guest, not yet acknowledged to the host */
        uint64_t in_flight;       /* sent to the host, not yet acknowledged by it */
        bool host_eof;            /* the host is done sending: SHUT_WR once to_guest is out */
        bool shut_wr;
        bool guest_eof; /* the guest's side ended (eof sent to the host) */
};

static struct tunnel *of_req(struct svc_req *r)
{
        return (struct tunnel *)((char *)r - offsetof(struct tunnel, r));
}

static void tunnel_free(struct agent *a, struct tunnel *t)
{
        svc_detach(&t->r);
        if (t->w.fd >= 0)
                watch_close(a, &t->w);
        cv_buf_free(&t->to_guest);
        free(t);
}

/* PORT_DATA to the host with any of data, eof, ack. */
static void send_data(struct tunnel *t, const uint8_t *data, size_t n, bool eof, uint64_t ack)
{
        struct conn *c = t->r.conn;
        size_t mark;
        cv_out_begin(&c->out, &mark);
        cv_enc_map(&c->out, (data != NULL) + eof + (ack > 0));
        if (data) {
                cv_enc_cstr(&c->out, "data");
                cv_enc_bytes(&c->out, data, n);
        }
        if (eof) {
                cv_enc_cstr(&c->out, "eof");
                cv_enc_bool(&c->out, true);
        }
        if (ack > 0) {
                cv_enc_cstr(&c->out, "ack");
                cv_enc_uint(&c->out, ack);
        }
        if (cv_out_end(&c->out, mark, CV_MSG_PORT_DATA_OUT, t->r.id) < 0)
                log_error("conn %u: id %u: queueing PORT_DATA failed", c->num, t->r.id);
        conn_touch(c);
}

/* Ends the tunnel with ERROR: `err` from a socket call. */
static void tunnel_fail(struct agent *a, struct tunnel *t, int err, const char *what)
{
        const char *name = strerrorname_np(err);
        if (err == ECONNREFUSED)
                conn_send_error(a, t->r.conn, t->r.id, "connection_refused",
                                "nothing listens on port %u in the sandbox (127.0.0.1 and ::1 "
                                "refused the connection)",
                                t->port);
        else
                conn_send_error(a, t->r.conn, t->r.id,
                                err == ECONNRESET || err == EPIPE ? "connection_reset" : "io_error",
                                "port %u: %s: %s (%s)", t->port, what, strerror(err),
                                name ? name : "?");
        tunnel_free(a, t);
}

static void update_interest(struct agent *a, struct tunnel *t)
{
        uint32_t ev = 0;
        if (!t->open) {
                ev = EPOLLOUT; /* the connect's outcome */
        } else {
                if (!t->guest_eof && t->in_flight < CV_PORT_WINDOW &&
                    !conn_over_high_water(t->r.conn))
                        ev |= EPOLLIN;
                if (cv_buf_pending(&t->to_guest) > 0)
                        ev |= EPOLLOUT;
        }
        int rc = watch_set(a, &t->w, ev);
        if (rc < 0)
                log_error("port %u: epoll_ctl: %s", t->port, strerror(-rc));
}

/* The OK once both directions ended; returns true if `t` was freed. */
static bool maybe_finish(struct agent *a, struct tunnel *t)
{
        if (!t->guest_eof || !t->shut_wr)
                return false;
        svc_reply_ok_empty(t->r.conn, t->r.id);
        tunnel_free(a, t);
        return true;
}

/* Writes what the guest takes, acknowledges it, half-closes after the host's eof.
 * Returns 0, or -1 if `t` was freed. */
static int flush_to_guest(struct agent *a, struct tunnel *t)
{
        size_t before = cv_buf_pending(&t->to_guest);
        int rc = before ? cv_buf_flush(&t->to_guest, t->w.fd) : 0;
        if (rc < 0) {
                tunnel_fail(a, t, -rc, "writing to the guest");
                return -1;
        }
        size_t pending = cv_buf_pending(&t->to_guest);
        t->written_unacked += before - pending;
        /* Acknowledge in quarters of the window, and whenever the queue is empty. */
        if (t->written_unacked > 0 && (pending == 0 || t->written_unacked >= CV_PORT_WINDOW / 4)) {
                send_data(t, NULL, 0, false, t->written_unacked);
                t->written_unacked = 0;
        }
        if (pending == 0 && t->host_eof && !t->shut_wr) {
                if (shutdown(t->w.fd, SHUT_WR) < 0 && errno != ENOTCONN) {
                        tunnel_fail(a, t, errno, "shutdown");
                        return -1;
                }
                t->shut_wr = true;
                if (maybe_finish(a, t))
                        return -1;
        }
        return 0;
}

/* Reads once from the guest within the window. Returns 0, or -1 if `t` was freed. */
static int read_from_guest(struct agent *a, struct tunnel *t)
{
        uint8_t buf[PORT_READ_CHUNK];
        size_t room = CV_PORT_WINDOW - t->in_flight;
        ssize_t n = read(t->w.fd, buf, room < sizeof(buf) ? room : sizeof(buf));
        if (n < 0) {
                if (errno == EAGAIN || errno == EINTR)
                        return 0;
                tunnel_fail(a, t, errno, "reading from the guest");
                return -1;
        }
        if (n == 0) {
                t->guest_eof = true;
                send_data(t, NULL, 0, true, 0);
                return maybe_finish(a, t) ? -1 : 0;
        }
        t->in_flight += (uint64_t)n;
        send_data(t, buf, (size_t)n, false, 0);
        return 0;
}

static int start_connect(struct agent *a, struct tunnel *t);

static void opened(struct agent *a, struct tunnel *t)
{
        t->open = true;
        struct conn *c = t->r.conn;
        size_t mark;
        cv_out_begin(&c->out, &mark);
        if (t->egress) {
                cv_enc_map(&c->out, 0);
        } else {
                cv_enc_map(&c->out, 1);
                cv_enc_cstr(&c->out, "address");
                cv_enc_cstr(&c->out, t->v6 ? "::1" : "127.0.0.1");
        }
        if (cv_out_end(&c->out, mark, t->egress ? CV_MSG_EGRESS_OPENED : CV_MSG_PORT_OPENED,
                       t->r.id) < 0)
                log_error("conn %u: id %u: queueing %s failed", c->num, t->r.id,
                          t->egress ? "EGRESS_OPENED" : "PORT_OPENED");
        conn_touch(c);
        log_debug("conn %u: id %u: tunnel %s open", c->num, t->r.id,
                  t->egress ? "from the egress proxy"
                  : t->v6   ? "to ::1"
                            : "to 127.0.0.1");
        /* Bytes the host sent while the connect was in progress. */
        if (flush_to_guest(a, t) == 0)
                update_interest(a, t);
}

/* The connect failed with `err`: IPv6's loopback next, or the end. */
static void connect_failed(struct agent *a, struct tunnel *t, int err)
{
        if (!t->v6 && (err == ECONNREFUSED || err == EADDRNOTAVAIL || err == ENETUNREACH)) {
                watch_close(a, &t->w);
                t->v6 = true;
                int rc = start_connect(a, t);
                if (rc < 0)
                        tunnel_fail(a, t,
                                    -rc == EAFNOSUPPORT || -rc == EADDRNOTAVAIL ||
                                            -rc == ENETUNREACH
                                        ? ECONNREFUSED
                                        : -rc,
                                    "connect");
                return;
        }
        tunnel_fail(a, t, err == EAFNOSUPPORT || err == EADDRNOTAVAIL ? ECONNREFUSED : err,
                    "connect");
}

static void on_tunnel(struct agent *a, struct watch *w, uint32_t events)
{
        struct tunnel *t = (struct tunnel *)((char *)w - offsetof(struct tunnel, w));
        if (!t->open) {
                int err = 0;
                socklen_t len = sizeof(err);
                if (getsockopt(w->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
                        err = errno;
                if (err)
                        connect_failed(a, t, err);
                else
                        opened(a, t);
                return;
        }
        if ((events & EPOLLOUT) && flush_to_guest(a, t) < 0)
                return;
        if ((events & (EPOLLIN | EPOLLHUP | EPOLLERR)) && !t->guest_eof &&
            t->in_flight < CV_PORT_WINDOW && read_from_guest(a, t) < 0)
                return;
        update_interest(a, t);
}

/* A non-blocking connect to the loopback address of the family `t->v6` names.
 * Returns 0 (connected or in progress, `t` then waits for it) or -errno. */
static int start_connect(struct agent *a, struct tunnel *t)
{
        /* The agent's filter allows exactly this socket() (agent_seccomp.c). */
        int fd = socket(t->v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        t->w = (struct watch){.fd = fd, .fn = on_tunnel};
        int rc;
        if (t->v6) {
                struct sockaddr_in6 sa = {.sin6_family = AF_INET6,
                                          .sin6_port = htons(t->port),
                                          .sin6_addr = IN6ADDR_LOOPBACK_INIT};
                rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
        } else {
                struct sockaddr_in sa = {.sin_family = AF_INET,
                                         .sin_port = htons(t->port),
                                         .sin_addr = {htonl(INADDR_LOOPBACK)}};
                rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
        }
        if (rc < 0 && errno != EINPROGRESS) {
                int err = errno;
                if (close(fd) < 0)
                        log_debug("port %u: close: %s", t->port, strerror(errno));
                t->w.fd = -1;
                if (!t->v6 && (err == ECONNREFUSED || err == EADDRNOTAVAIL || err == ENETUNREACH)) {
                        t->v6 = true;
                        return start_connect(a, t);
                }
                return -err;
        }
        if (rc == 0) {
                opened(a, t);
                return 0;
        }
        rc = watch_set(a, &t->w, EPOLLOUT);
        if (rc < 0) {
                if (close(fd) < 0)
                        log_debug("port %u: close: %s", t->port, strerror(errno));
                t->w.fd = -1;
        }
        return rc;
}

static void tunnel_cancel(struct agent *a, struct svc_req *r, bool notify)
{
        struct tunnel *t = of_req(r);
        if (notify && r->conn)
                conn_send_error(a, r->conn, r->id, CV_ERR_CANCELLED, "tunnel to port %u closed",
                                t->port);
        tunnel_free(a, t);
}

static void tunnel_resume(struct agent *a, struct svc_req *r)
{
        struct tunnel *t = of_req(r);
        if (t->open && t->w.fd >= 0)
                update_interest(a, t);
}

/* PORT_DATA from the host: bytes for the guest, its eof, its acknowledgements. */
static void tunnel_take(struct agent *a, struct svc_req *r, const struct cv_port_data *pd)
{
        struct tunnel *t = of_req(r);
        size_t n = pd->len;
        if (pd->ack > t->in_flight) {
                conn_send_error(a, r->conn, r->id, CV_ERR_BAD_REQUEST,
                                "PORT_DATA: ack of %llu bytes, %llu were sent",
                                (unsigned long long)pd->ack, (unsigned long long)t->in_flight);
                tunnel_free(a, t);
                return;
        }
        t->in_flight -= pd->ack;
        if (n > 0 && t->host_eof) {
                conn_send_error(a, r->conn, r->id, CV_ERR_BAD_REQUEST, "PORT_DATA: data after eof");
                tunnel_free(a, t);
                return;
        }
        if (cv_buf_pending(&t->to_guest) + n > CV_PORT_WINDOW) {
                conn_send_error(a, r->conn, r->id, CV_ERR_TOO_LARGE,
                                "PORT_DATA: %zu bytes over the window of %u unacknowledged bytes",
                                cv_buf_pending(&t->to_guest) + n - CV_PORT_WINDOW, CV_PORT_WINDOW);
                tunnel_free(a, t);
                return;
        }
        /* Nothing queued before them: straight from the message to the guest's socket. */
        size_t direct = 0;
        if (n > 0 && t->open && cv_buf_pending(&t->to_guest) == 0) {
                ssize_t k = write(t->w.fd, pd->data, n);
                if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                        tunnel_fail(a, t, errno, "writing to the guest");
                        return;
                }
                direct = k > 0 ? (size_t)k : 0;
                t->written_unacked += direct;
        }
        if (n > direct && cv_buf_append(&t->to_guest, pd->data + direct, n - direct) < 0) {
                conn_send_error(a, r->conn, r->id, CV_ERR_INTERNAL, "PORT_DATA: out of memory");
                tunnel_free(a, t);
                return;
        }
        if (pd->eof)
                t->host_eof = true;
        if (!t->open)
                return; /* written once connected */
        if (flush_to_guest(a, t) == 0)
                update_interest(a, t);
}

/* PORT_DATA of another shape than cv_port_data_decode() takes, through libcbor. */
static void tunnel_data(struct agent *a, struct svc_req *r, uint16_t type, const cbor_item_t *body)
{
        (void)type;
        struct cv_port_data pd = {0};
        int r1 = cv_map_get_bytes(body, "data", &pd.data, &pd.len),
            r2 = cv_map_get_uint(body, "ack", &pd.ack), r3 = cv_map_get_bool(body, "eof", &pd.eof);
        if ((r1 < 0 && r1 != -ENOENT) || (r2 < 0 && r2 != -ENOENT) || (r3 < 0 && r3 != -ENOENT)) {
                conn_send_error(a, r->conn, r->id, CV_ERR_BAD_REQUEST,
                                "PORT_DATA: `data` must be bytes, `ack` an unsigned integer, "
                                "`eof` a boolean");
                tunnel_free(a, of_req(r));
                return;
        }
        tunnel_take(a, r, &pd);
}

static const struct svc_ops tunnel_ops = {
    .name = "tunnel",
    .cancel = tunnel_cancel,
    .resume = tunnel_resume,
    .data = tunnel_data,
    .port_data = tunnel_take,
};

void ports_open_request(struct agent *a, struct conn *c, uint32_t id, const cbor_item_t *body)
{
        uint64_t port;
        if (cv_map_get_uint(body, "port", &port) < 0 || port == 0 || port > 65535) {
                conn_send_error(a, c, id, CV_ERR_BAD_REQUEST, "`port` must be a TCP port, 1-65535");
                return;
        }
        unsigned ntunnels = 0;
        for (struct svc_req *r = c->svcs; r; r = r->next)
                ntunnels += r->ops == &tunnel_ops;
        if (ntunnels >= PORT_MAX_TUNNELS || c->ninflight >= CONN_MAX_INFLIGHT) {
                conn_send_error(a, c, id, CV_ERR_BUSY, "%u tunnels already open on this connection",
                                ntunnels);
                return;
        }
        struct tunnel *t = calloc(1, sizeof(*t));
        if (!t) {
                conn_send_error(a, c, id, CV_ERR_INTERNAL, "out of memory");
                return;
        }
        t->port = (uint16_t)port;
        t->w.fd = -1;
        cv_buf_init(&t->to_guest);
        svc_attach(c, &t->r, id, &tunnel_ops);
        int rc = start_connect(a, t);
        if (rc < 0)
                tunnel_fail(a, t, -rc == EAFNOSUPPORT || -rc == EADDRNOTAVAIL ? ECONNREFUSED : -rc,
                            "connect");
}

void ports_adopt(struct agent *a, struct conn *c, uint32_t id, int fd)
{
        struct tunnel *t = calloc(1, sizeof(*t));
        if (!t) {
                if (close(fd) < 0)
                        log_debug("egress: close: %s", strerror(errno));
                conn_send_error(a, c, id, CV_ERR_INTERNAL, "out of memory");
                return;
        }
        t->egress = true;
        t->w = (struct watch){.fd = fd, .fn = on_tunnel};
        cv_buf_init(&t->to_guest);
        svc_attach(c, &t->r, id, &tunnel_ops);
        opened(a, t);
}
