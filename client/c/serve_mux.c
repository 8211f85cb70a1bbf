/* One agent connection shared by many requests: see serve_mux.h. */
#include "serve_mux.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "buf.h"
#include "msgtypes.h"
#include "writer.h"

struct mux_item {
        struct cvc_event ev;
        size_t bytes;
        struct mux_item *next;
};

/* About what a decoded tree holds: its strings' bytes and a little per node. */
static size_t tree_bytes(const cbor_item_t *it, int depth)
{
        size_t n = 16;
        if (depth > 64)
                return n;
        if (cbor_isa_string(it) && cbor_string_is_definite(it))
                n += cbor_string_length(it);
        else if (cbor_isa_bytestring(it) && cbor_bytestring_is_definite(it))
                n += cbor_bytestring_length(it);
        else if (cbor_isa_array(it))
                for (size_t i = 0; i < cbor_array_size(it); i++)
                        n += tree_bytes(cbor_array_handle(it)[i], depth + 1);
        else if (cbor_isa_map(it))
                for (size_t i = 0; i < cbor_map_size(it); i++)
                        n += tree_bytes(cbor_map_handle(it)[i].key, depth + 1) +
                             tree_bytes(cbor_map_handle(it)[i].value, depth + 1);
        return n;
}

static size_t event_bytes(const struct cvc_event *ev)
{
        return ev->root ? tree_bytes(ev->root, 0) : 64;
}

static struct mux_req *find(struct mux *m, uint32_t id)
{
        for (struct mux_req *r = m->reqs; r; r = r->next)
                if (r->id == id)
                        return r;
        return NULL;
}

static void unlink_req(struct mux *m, struct mux_req *r)
{
        for (struct mux_req **p = &m->reqs; *p; p = &(*p)->next)
                if (*p == r) {
                        *p = r->next;
                        return;
                }
}

static void drop_queue(struct mux_req *r)
{
        while (r->head) {
                struct mux_item *it = r->head;
                r->head = it->next;
                cvc_event_free(&it->ev);
                free(it);
        }
        r->tail = NULL;
        r->queued_bytes = 0;
}

static void *reader_main(void *arg)
{
        struct mux *m = arg;
        for (;;) {
                struct cvc_event ev;
                int rc = cvc_next_event(m->c, -1, &ev);
                if (rc == 0)
                        continue;
                if (rc < 0) {
                        pthread_mutex_lock(&m->lock);
                        m->broken = true;
                        snprintf(m->why, sizeof(m->why), "%s", cvc_errmsg(m->c));
                        pthread_cond_broadcast(&m->cond);
                        pthread_mutex_unlock(&m->lock);
                        return NULL;
                }
                pthread_mutex_lock(&m->lock);
                struct mux_req *r = find(m, ev.id);
                /* Back-pressure: wait while the consumer is behind. */
                if (r && r->lossy && r->queued_bytes > MUX_QUEUE_MAX_BYTES &&
                    !cv_msg_is_terminal(ev.type)) {
                        r->dropped++; /* e.g. watch events nobody collects */
                        pthread_mutex_unlock(&m->lock);
                        cvc_event_free(&ev);
                        continue;
                }
                while (r && !r->abandoned && r->queued_bytes > MUX_QUEUE_MAX_BYTES && !m->broken) {
                        pthread_cond_wait(&m->cond, &m->lock);
                        r = find(m, ev.id);
                }
                if (!r || r->abandoned) {
                        if (r && cv_msg_is_terminal(ev.type)) {
                                unlink_req(m, r); /* abandoned: nobody frees it but us */
                                free(r);
                        }
                        pthread_mutex_unlock(&m->lock);
                        cvc_event_free(&ev);
                        continue;
                }
                struct mux_item *it = calloc(1, sizeof(*it));
                if (!it) {
                        m->broken = true;
                        snprintf(m->why, sizeof(m->why), "out of memory");
                        pthread_cond_broadcast(&m->cond);
                        pthread_mutex_unlock(&m->lock);
                        cvc_event_free(&ev);
                        return NULL;
                }
                it->ev = ev;
                it->bytes = event_bytes(&ev);
                if (r->tail)
                        r->tail->next = it;
                else
                        r->head = it;
                r->tail = it;
                r->queued_bytes += it->bytes;
                if (cv_msg_is_terminal(ev.type))
                        r->ended = true;
                pthread_cond_broadcast(&m->cond);
                pthread_mutex_unlock(&m->lock);
        }
}

int mux_start(struct mux *m, struct cvc *c)
{
        memset(m, 0, sizeof(*m));
        m->c = c;
        m->fd = cvc_fd(c);
        m->next_id = 0x10000; /* clear of the ids the restore's handshake used */
        pthread_mutex_init(&m->lock, NULL);
        pthread_mutex_init(&m->write_lock, NULL);
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&m->cond, &ca);
        pthread_condattr_destroy(&ca);
        int rc = pthread_create(&m->reader, NULL, reader_main, m);
        if (rc != 0)
                return -rc;
        m->reader_started = true;
        return 0;
}

void mux_close(struct mux *m)
{
        if (!m->c)
                return;
        pthread_mutex_lock(&m->lock);
        m->broken = true; /* frees a reader waiting for a slow consumer */
        pthread_cond_broadcast(&m->cond);
        pthread_mutex_unlock(&m->lock);
        if (shutdown(m->fd, SHUT_RDWR) < 0 && errno != ENOTCONN)
                fprintf(stderr, "cellvm serve: shutdown of an agent connection: %s\n",
                        strerror(errno));
        if (m->reader_started)
                pthread_join(m->reader, NULL);
        pthread_mutex_lock(&m->lock);
        if (!m->why[0])
                snprintf(m->why, sizeof(m->why), "the sandbox was closed");
        pthread_cond_broadcast(&m->cond);
        /* Requests still held by consumers stay theirs (mux_close_req frees
         * them); abandoned ones are freed here. */
        struct mux_req **p = &m->reqs;
        while (*p) {
                struct mux_req *r = *p;
                if (r->abandoned) {
                        *p = r->next;
                        drop_queue(r);
                        free(r);
                } else {
                        p = &r->next;
                }
        }
        pthread_mutex_unlock(&m->lock);
        cvc_close(m->c);
        m->c = NULL;
}

int mux_open(struct mux *m, struct mux_req **out)
{
        struct mux_req *r = calloc(1, sizeof(*r));
        if (!r)
                return -ENOMEM;
        pthread_mutex_lock(&m->lock);
        if (m->broken) {
                pthread_mutex_unlock(&m->lock);
                free(r);
                return -ECONNRESET;
        }
        do {
                if (++m->next_id == 0)
                        m->next_id = 0x10000;
        } while (find(m, m->next_id));
        r->id = m->next_id;
        r->m = m;
        r->next = m->reqs;
        m->reqs = r;
        pthread_mutex_unlock(&m->lock);
        *out = r;
        return 0;
}

void mux_set_lossy(struct mux_req *r)
{
        pthread_mutex_lock(&r->m->lock);
        r->lossy = true;
        pthread_mutex_unlock(&r->m->lock);
}

int mux_send(struct mux_req *r, uint16_t type, const uint8_t *body, size_t len)
{
        struct mux *m = r->m;
        struct cv_buf b;
        cv_buf_init(&b);
        int rc = cv_out_msg(&b, type, 0, r->id, body, len);
        pthread_mutex_lock(&m->write_lock);
        while (rc == 0 && cv_buf_pending(&b))
                rc = cv_buf_flush(&b, m->fd);
        pthread_mutex_unlock(&m->write_lock);
        cv_buf_free(&b);
        return rc;
}

int mux_send_buf(struct mux_req *r, uint16_t type, struct cv_buf *b)
{
        if (b->err)
                return b->err;
        return mux_send(r, type, cv_buf_head(b), cv_buf_pending(b));
}

int mux_next(struct mux_req *r, int timeout_ms, struct cvc_event *ev)
{
        struct mux *m = r->m;
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        if (timeout_ms >= 0) {
                until.tv_sec += timeout_ms / 1000;
                until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
                if (until.tv_nsec >= 1000000000L) {
                        until.tv_sec++;
                        until.tv_nsec -= 1000000000L;
                }
        }
        pthread_mutex_lock(&m->lock);
        int rc = 0;
        for (;;) {
                if (r->head) {
                        struct mux_item *it = r->head;
                        r->head = it->next;
                        if (!r->head)
                                r->tail = NULL;
                        r->queued_bytes -= it->bytes;
                        *ev = it->ev;
                        free(it);
                        pthread_cond_broadcast(&m->cond); /* the reader may wait on us */
                        rc = 1;
                        break;
                }
                if (r->ended) {
                        rc = -ENODATA;
                        break;
                }
                if (m->broken) {
                        rc = -ECONNRESET;
                        break;
                }
                if (timeout_ms < 0) {
                        pthread_cond_wait(&m->cond, &m->lock);
                } else if (pthread_cond_timedwait(&m->cond, &m->lock, &until) == ETIMEDOUT) {
                        rc = 0;
                        break;
                }
        }
        pthread_mutex_unlock(&m->lock);
        return rc;
}

void mux_close_req(struct mux_req *r)
{
        struct mux *m = r->m;
        pthread_mutex_lock(&m->lock);
        drop_queue(r);
        if (r->ended || m->broken || !m->c) {
                unlink_req(m, r);
                free(r);
        } else {
                r->abandoned = true; /* the reader frees it at its terminal message */
        }
        pthread_cond_broadcast(&m->cond);
        pthread_mutex_unlock(&m->lock);
}

int mux_call(struct mux *m, uint16_t type, struct cv_buf *body, int timeout_ms, cbor_item_t **reply,
             char *err, size_t errlen)
{
        struct mux_req *r;
        int rc = mux_open(m, &r);
        if (rc < 0) {
                snprintf(err, errlen, "the sandbox's agent connection is gone");
                return rc;
        }
        rc = mux_send_buf(r, type, body);
        if (rc < 0) {
                snprintf(err, errlen, "sending %s: %s", cv_msg_type_name(type), strerror(-rc));
                mux_close_req(r);
                return rc;
        }
        for (;;) {
                struct cvc_event ev;
                rc = mux_next(r, timeout_ms, &ev);
                if (rc == 0) {
                        snprintf(err, errlen, "no answer to %s within %d ms",
                                 cv_msg_type_name(type), timeout_ms);
                        rc = -ETIMEDOUT;
                        break;
                }
                if (rc < 0) {
                        snprintf(err, errlen, "the sandbox's agent connection broke");
                        break;
                }
                if (!cv_msg_is_terminal(ev.type)) {
                        cvc_event_free(&ev);
                        continue;
                }
                if (ev.type == CV_MSG_ERROR) {
                        snprintf(err, errlen, "%.*s: %.*s", (int)ev.u.fail.code_len, ev.u.fail.code,
                                 (int)ev.u.fail.message_len, ev.u.fail.message);
                        rc = -EREMOTEIO;
                } else {
                        if (reply)
                                *reply = cbor_incref(ev.root);
                        rc = 0;
                }
                cvc_event_free(&ev);
                break;
        }
        mux_close_req(r);
        return rc;
}
