/*
 * The egress service (docs/PROTOCOL.md section 13): the guest's HTTP proxy
 * address (127.0.0.1:3128 under init) is a socket the agent listens on, and
 * each connection user code makes to it becomes a stream to the host, which
 * reads the proxy request, decides and dials (docs/NETWORK.md). The agent
 * parses none of the stream: it is a tunnel (ports.c) that the guest opened.
 *
 * The host asks for streams with EGRESS_ACCEPT, one request per stream it is
 * ready to carry; a guest connection is accepted only while one waits, so the
 * host's count of waiting requests bounds the streams, and connections beyond
 * it wait in the listen backlog. No EGRESS_ACCEPT, no egress.
 */

#include "egress.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent.h"
#include "conn.h"
#include "listen.h"
#include "log.h"
#include "loop.h"
#include "msgtypes.h"
#include "ports.h"
#include "svc.h"

/* EGRESS_ACCEPTs one connection may have waiting. */
#define EGRESS_MAX_WAITING 256u

struct egress_wait {
        struct svc_req r;
        struct egress_wait *next; /* in a->egress_waits, oldest first */
};

static struct egress_wait *of_req(struct svc_req *r)
{
        return (struct egress_wait *)((char *)r - offsetof(struct egress_wait, r));
}

/* Accept only while a request waits. */
static void update_interest(struct agent *a)
{
        if (a->egress.fd < 0)
                return;
        int rc = watch_set(a, &a->egress, a->egress_waits ? EPOLLIN : 0);
        if (rc < 0)
                log_error("egress: epoll_ctl: %s", strerror(-rc));
}

static void unlink_wait(struct agent *a, struct egress_wait *w)
{
        for (struct egress_wait **p = &a->egress_waits; *p; p = &(*p)->next)
                if (*p == w) {
                        *p = w->next;
                        break;
                }
        svc_detach(&w->r);
}

static void on_accept(struct agent *a, struct watch *lw, uint32_t events)
{
        (void)events;
        while (a->egress_waits) {
                int fd = accept4(lw->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
                if (fd < 0) {
                        if (errno == EINTR || errno == ECONNABORTED)
                                continue;
                        if (errno != EAGAIN)
                                log_error("egress: accept4: %s", strerror(errno));
                        break;
                }
                struct egress_wait *w = a->egress_waits;
                struct conn *c = w->r.conn;
                uint32_t id = w->r.id;
                unlink_wait(a, w);
                free(w);
                ports_adopt(a, c, id, fd);
        }
        update_interest(a);
}

static void wait_cancel(struct agent *a, struct svc_req *r, bool notify)
{
        struct egress_wait *w = of_req(r);
        if (notify && r->conn)
                conn_send_error(a, r->conn, r->id, CV_ERR_CANCELLED, "egress accept cancelled");
        unlink_wait(a, w);
        free(w);
        update_interest(a);
}

static const struct svc_ops wait_ops = {
    .name = "egress accept",
    .cancel = wait_cancel,
};

void egress_accept_request(struct agent *a, struct conn *c, uint32_t id, const cbor_item_t *body)
{
        (void)body;
        if (a->egress.fd < 0) {
                conn_send_error(a, c, id, CV_ERR_NOT_FOUND,
                                "this agent has no egress proxy (--egress none)");
                return;
        }
        unsigned waiting = 0;
        for (struct svc_req *r = c->svcs; r; r = r->next)
                waiting += r->ops == &wait_ops;
        if (waiting >= EGRESS_MAX_WAITING || c->ninflight >= CONN_MAX_INFLIGHT) {
                conn_send_error(a, c, id, CV_ERR_BUSY,
                                "%u egress accepts already wait on this connection", waiting);
                return;
        }
        struct egress_wait *w = calloc(1, sizeof(*w));
        if (!w) {
                conn_send_error(a, c, id, CV_ERR_INTERNAL, "out of memory");
                return;
        }
        svc_attach(c, &w->r, id, &wait_ops);
        struct egress_wait **p = &a->egress_waits;
        while (*p)
                p = &(*p)->next;
        *p = w;
        update_interest(a);
}

int egress_listen(struct agent *a, const char *addr)
{
        if (strncmp(addr, "tcp:", 4) != 0)
                return -EINVAL;
        char bound[128];
        int fd = listen_tcp_loopback(addr + 4, bound, sizeof(bound));
        if (fd < 0)
                return fd;
        a->egress = (struct watch){.fd = fd, .fn = on_accept};
        log_info("egress proxy on %s", bound);
        return 0;
}

void egress_close(struct agent *a)
{
        if (a->egress.fd >= 0)
                watch_close(a, &a->egress);
}
