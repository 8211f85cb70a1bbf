/* Client connections: reading requests, queuing replies, flow control, disconnects. */

#include "conn.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent.h"
#include "frame.h"
#include "listen.h"
#include "log.h"
#include "loop.h"
#include "msgtypes.h"
#include "writer.h"

static const char *const transport_names[] = {"unix", "vsock", "tcp", "serial"};

static void on_conn(struct agent *a, struct watch *w, uint32_t events);

static const struct conn_handlers *handlers;

void conn_set_handlers(const struct conn_handlers *h)
{
        handlers = h;
}

struct conn *conn_new(struct agent *a, int fd, enum transport kind)
{
        struct conn *c = calloc(1, sizeof(*c));
        if (!c) {
                log_error("new %s connection: out of memory", transport_names[kind]);
                return NULL;
        }
        c->num = ++a->next_conn_num;
        c->kind = kind;
        cv_reader_init(&c->rd, CV_DEFAULT_MAX_MESSAGE);
        c->rd.max_reads = CONN_MAX_READS; /* the fd is non-blocking */
        cv_buf_init(&c->out);
        c->out.high_water = CONN_HIGH_WATER;
        c->w = (struct watch){.fd = fd, .fn = on_conn};
        int rc = watch_set(a, &c->w, EPOLLIN);
        if (rc < 0) {
                log_error("conn %u: epoll_ctl(ADD): %s", c->num, strerror(-rc));
                free(c);
                return NULL;
        }
        c->next = a->conns;
        a->conns = c;
        /* A disconnected virtio-serial port hangs up at once, ten times a second: keep quiet. */
        log_msg(kind == TR_SERIAL ? LOG_DEBUG : LOG_INFO, "conn %u: %s connection open", c->num,
                transport_names[kind]);
        return c;
}

bool conn_over_high_water(const struct conn *c)
{
        return cv_buf_above_high_water(&c->out);
}

void conn_touch(struct conn *c)
{
        c->dirty = true;
}

void conn_drop_inflight(struct agent *a, struct conn *c)
{
        handlers->drop_inflight(a, c);
}

void conn_close(struct agent *a, struct conn *c, const char *why)
{
        bool quiet = c->kind == TR_SERIAL && !c->hello_done && c->rd.hdr_got == 0 &&
                     cv_buf_pending(&c->out) == 0;
        log_msg(quiet ? LOG_DEBUG : LOG_INFO, "conn %u: closed (%s)", c->num, why);
        conn_drop_inflight(a, c);
        if (c->closed)
                c->closed(c, c->owner);
        for (struct conn **pp = &a->conns; *pp; pp = &(*pp)->next) {
                if (*pp == c) {
                        *pp = c->next;
                        break;
                }
        }
        watch_close(a, &c->w);
        cv_reader_free(&c->rd);
        cv_buf_free(&c->out);
        free(c);
}

void conn_send_error(struct agent *a, struct conn *c, uint32_t id, const char *code,
                     const char *fmt, ...)
{
        (void)a;
        char msg[512];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        log_debug("conn %u: id %u: ERROR %s: %s", c->num, id, code, msg);
        int rc = cv_out_error(&c->out, id, code, msg);
        if (rc < 0)
                log_error("conn %u: id %u: queueing ERROR %s: %s", c->num, id, code, strerror(-rc));
        conn_touch(c);
}

static void conn_update_interest(struct agent *a, struct conn *c)
{
        uint32_t ev = 0;
        if (!conn_over_high_water(c))
                ev |= EPOLLIN;
        if (cv_buf_pending(&c->out) > 0)
                ev |= EPOLLOUT;
        if (ev == 0)
                ev = EPOLLOUT; /* unreachable: over the high water means output is pending */
        int rc = watch_set(a, &c->w, ev);
        if (rc < 0)
                log_error("conn %u: epoll_ctl: %s", c->num, strerror(-rc));
}

/* Writes what the socket takes. Returns 0, or -1 if the connection was closed. */
static int conn_flush(struct agent *a, struct conn *c)
{
        bool was_over = conn_over_high_water(c);
        c->dirty = false;
        int rc = cv_buf_flush(&c->out, c->w.fd);
        if (rc < 0) {
                char why[96];
                snprintf(why, sizeof(why), "write: %s", strerror(-rc));
                conn_close(a, c, why);
                return -1;
        }
        conn_update_interest(a, c);
        if (was_over && !conn_over_high_water(c))
                handlers->drained(a, c);
        return 0;
}

static void conn_read(struct agent *a, struct conn *c);

/* Bytes already read but not yet parsed, with room to answer them. */
static bool conn_has_buffered_requests(const struct conn *c)
{
        return cv_reader_buffered(&c->rd) > 0 && !conn_over_high_water(c);
}

bool conn_flush_dirty(struct agent *a)
{
        bool more = false;
        struct conn *next;
        for (struct conn *c = a->conns; c; c = next) {
                next = c->next;
                /* epoll does not know about bytes sitting in our read buffer. */
                if (conn_has_buffered_requests(c)) {
                        conn_read(a, c);
                        continue; /* `c` may be gone; flushed on the next round */
                }
                if (c->dirty && conn_flush(a, c) < 0)
                        continue;
        }
        for (struct conn *c = a->conns; c; c = c->next)
                more = more || c->dirty || conn_has_buffered_requests(c);
        return more;
}

/* A frame error: tell the peer (best effort) and close. */
static void conn_abort(struct agent *a, struct conn *c, const char *code, const char *why)
{
        conn_send_error(a, c, 0, code, "%s", why);
        if (cv_buf_flush(&c->out, c->w.fd) < 0)
                log_debug("conn %u: could not send %s before closing", c->num, code);
        conn_close(a, c, why);
}

static void conn_read(struct agent *a, struct conn *c)
{
        /* Bounded work per wakeup; level-triggered epoll brings us back for the rest. */
        for (int i = 0; i < 256 && !conn_over_high_water(c); i++) {
                struct cv_msg m;
                int rc = cv_reader_read(&c->rd, c->w.fd, &m);
                if (rc == CV_READ_MSG) {
                        handlers->message(a, c, m.type, m.id, m.body, m.len);
                        /* Its reply (a tunnel's ack above all) goes now, not after the
                         * rest of what there is to read: the peer may be waiting for it. */
                        if (c->dirty && conn_flush(a, c) < 0)
                                return;
                        continue;
                }
                if (rc == CV_READ_NEED)
                        return;
                char why[160];
                if (rc == CV_READ_EOF) {
                        /* A peer that only half-closed still gets the replies already made. */
                        if (cv_buf_pending(&c->out) > 0 && cv_buf_flush(&c->out, c->w.fd) < 0)
                                log_debug("conn %u: replies lost at end of stream", c->num);
                        conn_close(a, c,
                                   cv_reader_mid_message(&c->rd) ? "end of stream inside a frame"
                                                                 : "end of stream");
                } else if (rc == -EBADMSG) {
                        snprintf(why, sizeof(why),
                                 "bad frame header: length %u, type %#x, flags %#x, id %u",
                                 c->rd.bad.len, c->rd.bad.type, c->rd.bad.flags, c->rd.bad.id);
                        conn_abort(a, c, CV_ERR_BAD_FRAME, why);
                } else if (rc == -EMSGSIZE) {
                        snprintf(why, sizeof(why), "message type %#x id %u exceeds max_message %zu",
                                 c->rd.bad.type, c->rd.bad.id, c->rd.max_message);
                        conn_abort(a, c, CV_ERR_TOO_LARGE, why);
                } else {
                        snprintf(why, sizeof(why), "read: %s", strerror(-rc));
                        conn_close(a, c, why);
                }
                return;
        }
}

static void on_conn(struct agent *a, struct watch *w, uint32_t events)
{
        struct conn *c = (struct conn *)((char *)w - offsetof(struct conn, w));
        if (events & EPOLLOUT) {
                if (conn_flush(a, c) < 0)
                        return;
        }
        if (!conn_over_high_water(c)) {
                if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
                        conn_read(a, c);
                return;
        }
        /* Not reading (flow control) and the peer is gone: nothing more will be delivered. */
        if (events & (EPOLLHUP | EPOLLERR))
                conn_close(a, c, "hang-up while output was pending");
}
