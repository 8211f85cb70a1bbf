/* libcellvm connection: handshake, request/terminal matching, execution. */
#include "cellvm.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "cbor_util.h"
#include "connect.h"
#include "frame.h"
#include "mono_clock.h"
#include "msgtypes.h"
#include "reader.h"
#include "writer.h"

struct cvc {
        int fd;
        struct cv_reader reader;
        struct cv_buf out;
        uint32_t next_id;
        cbor_item_t *hello;
        char err[512];
};

int cvc_fail(struct cvc *c, int rc, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->err, sizeof(c->err), fmt, ap);
        va_end(ap);
        return rc;
}

const char *cvc_errmsg(const struct cvc *c)
{
        return c->err;
}

int cvc_fd(const struct cvc *c)
{
        return c->fd;
}

const cbor_item_t *cvc_hello(const struct cvc *c)
{
        return c->hello;
}

int cvc_send(struct cvc *c, uint16_t type, uint32_t id, const uint8_t *body, size_t len)
{
        int rc = cv_out_msg(&c->out, type, 0, id, body, len);
        if (rc < 0)
                return cvc_fail(c, rc, "encode %s: %s", cv_msg_type_name(type), strerror(-rc));
        while (cv_buf_pending(&c->out)) {
                rc = cv_buf_flush(&c->out, c->fd);
                if (rc < 0)
                        return cvc_fail(c, rc, "send %s: %s", cv_msg_type_name(type),
                                        strerror(-rc));
        }
        return 0;
}

uint32_t cvc_new_id(struct cvc *c)
{
        if (++c->next_id == 0)
                c->next_id = 1;
        return c->next_id;
}

int cvc_next_event(struct cvc *c, int timeout_ms, struct cvc_event *ev)
{
        for (;;) {
                struct cv_msg msg;
                int rc;
                if (cv_reader_buffered(&c->reader) == 0 && timeout_ms >= 0) {
                        struct pollfd p = {.fd = c->fd, .events = POLLIN};
                        rc = poll(&p, 1, timeout_ms);
                        if (rc < 0 && errno == EINTR)
                                return 0;
                        if (rc < 0)
                                return cvc_fail(c, -errno, "poll: %s", strerror(errno));
                        if (rc == 0)
                                return 0;
                }
                rc = cv_reader_read(&c->reader, c->fd, &msg);
                if (rc == -EINTR)
                        return 0;
                if (rc == CV_READ_NEED)
                        continue;
                if (rc == CV_READ_EOF)
                        return cvc_fail(c, -ECONNRESET, "agent closed the connection%s",
                                        cv_reader_mid_message(&c->reader) ? " mid-frame" : "");
                if (rc < 0)
                        return cvc_fail(c, -EPROTO, "bad data from agent: %s", strerror(-rc));
                if (msg.type < CV_MSG_FROM_AGENT)
                        return cvc_fail(c, -EPROTO, "agent sent a request type %#x", msg.type);
                rc = cvc_event_decode(msg.type, msg.id, msg.body, msg.len, ev);
                if (rc < 0)
                        return cvc_fail(c, -EPROTO, "malformed %s body from agent",
                                        cv_msg_type_name(msg.type));
                return 1;
        }
}

int cvc_remote_error(struct cvc *c, const struct cvc_event *ev)
{
        return cvc_fail(c, -EREMOTEIO, "%.*s: %.*s", (int)ev->u.fail.code_len, ev->u.fail.code,
                        (int)ev->u.fail.message_len, ev->u.fail.message);
}

int cvc_call_timeout(struct cvc *c, uint16_t type, const uint8_t *body, size_t len, int timeout_ms,
                     cbor_item_t **reply)
{
        uint64_t deadline = timeout_ms >= 0 ? mono_ns() + (uint64_t)timeout_ms * 1000000u : 0;
        uint32_t id = cvc_new_id(c);
        int rc = cvc_send(c, type, id, body, len);
        if (rc < 0)
                return rc;
        for (;;) {
                int wait = -1;
                if (deadline) {
                        uint64_t now = mono_ns();
                        if (now >= deadline)
                                return cvc_fail(c, -ETIMEDOUT, "no answer to %s within %d ms",
                                                cv_msg_type_name(type), timeout_ms);
                        wait = (int)((deadline - now) / 1000000u) + 1;
                }
                struct cvc_event ev;
                rc = cvc_next_event(c, wait, &ev);
                if (rc < 0)
                        return rc;
                if (rc == 0)
                        continue;
                if (ev.id != id || !cv_msg_is_terminal(ev.type)) {
                        cvc_event_free(&ev); /* not ours (e.g. a late reply): skip */
                        continue;
                }
                if (ev.type == CV_MSG_ERROR) {
                        rc = cvc_remote_error(c, &ev);
                        cvc_event_free(&ev);
                        return rc;
                }
                if (reply)
                        *reply = cbor_incref(ev.root);
                cvc_event_free(&ev);
                return 0;
        }
}

int cvc_call(struct cvc *c, uint16_t type, const uint8_t *body, size_t len, cbor_item_t **reply)
{
        return cvc_call_timeout(c, type, body, len, -1, reply);
}

int cvc_call_buf(struct cvc *c, uint16_t type, struct cv_buf *b, cbor_item_t **reply)
{
        if (b->err)
                return cvc_fail(c, b->err, "encode %s: %s", cv_msg_type_name(type),
                                strerror(-b->err));
        return cvc_call(c, type, cv_buf_head(b), cv_buf_pending(b), reply);
}

static int encode_hello(struct cv_buf *b)
{
        cv_enc_map(b, 2);
        cv_enc_cstr(b, "protocol");
        cv_enc_uint(b, CV_PROTOCOL_VERSION);
        cv_enc_cstr(b, "client");
        cv_enc_cstr(b, "libcellvm/" CVC_VERSION);
        return b->err;
}

/*
 * Sends HELLO, re-sending it while unanswered (virtio-serial drops bytes that
 * arrive while the guest agent reopens its port), until a reply, the deadline,
 * or `still_alive` says the peer's VMM is gone. Any OK with an id of one of
 * our HELLOs is the reply: nothing else has been sent on this connection.
 */
static int hello_with_retry(struct cvc *c, const struct cvc_connect_opts *o)
{
        struct cv_buf b;
        cv_buf_init(&b);
        int rc = encode_hello(&b);
        if (rc < 0) {
                cv_buf_free(&b);
                return cvc_fail(c, rc, "encode HELLO: %s", strerror(-rc));
        }
        uint64_t start = mono_ns();
        uint64_t deadline = o->timeout_ms > 0 ? start + (uint64_t)o->timeout_ms * 1000000u : 0;
        int interval_ms = o->hello_resend_ms;
        uint64_t resend_at = 0;
        uint32_t first_id = 0, last_id = 0;
        for (;;) {
                uint64_t now = mono_ns();
                if (deadline && now >= deadline) {
                        rc = cvc_fail(c, -ETIMEDOUT, "no HELLO reply within %d ms", o->timeout_ms);
                        break;
                }
                if (o->still_alive && !o->still_alive(o->ud)) {
                        rc = cvc_fail(c, -ECHILD, "the VMM exited before the agent answered");
                        break;
                }
                if (now >= resend_at) {
                        last_id = cvc_new_id(c);
                        if (!first_id)
                                first_id = last_id;
                        rc =
                            cvc_send(c, CV_MSG_HELLO, last_id, cv_buf_head(&b), cv_buf_pending(&b));
                        if (rc < 0)
                                break;
                        if (interval_ms <= 0)
                                resend_at = UINT64_MAX;
                        else {
                                resend_at = now + (uint64_t)interval_ms * 1000000u;
                                interval_ms = interval_ms * 2 > CVC_HELLO_RESEND_MAX_MS
                                                  ? CVC_HELLO_RESEND_MAX_MS
                                                  : interval_ms * 2;
                        }
                }
                struct cvc_event ev;
                rc = cvc_next_event(c, 50, &ev);
                if (rc < 0)
                        break;
                if (rc == 0)
                        continue;
                bool ours = ev.id >= first_id && ev.id <= last_id;
                if (ours && ev.type == CV_MSG_ERROR) {
                        rc = cvc_remote_error(c, &ev);
                        cvc_event_free(&ev);
                        break;
                }
                if (ours && ev.type == CV_MSG_OK) {
                        c->hello = cbor_incref(ev.root);
                        cvc_event_free(&ev);
                        rc = 0;
                        break;
                }
                cvc_event_free(&ev);
        }
        cv_buf_free(&b);
        return rc;
}

static struct cvc *new_cvc(void)
{
        struct cvc *c = calloc(1, sizeof(*c));
        if (!c)
                return NULL;
        c->fd = -1;
        cv_reader_init(&c->reader, 0);
        cv_buf_init(&c->out);
        return c;
}

static const struct cvc_connect_opts plain_opts = {.hello_resend_ms = CVC_HELLO_RESEND_MS};

int cvc_connect_ex(const char *addr, const struct cvc_connect_opts *opts, struct cvc **out)
{
        struct cvc *c = new_cvc();
        if (!c)
                return -ENOMEM;
        *out = c; /* even on failure, so the caller can read the error */
        if (!opts)
                opts = &plain_opts;
        /* A VMM creates its socket file (bind) a moment before it listens: a
         * refusal then is retried while the VMM runs, within the deadline. */
        uint64_t deadline =
            opts->timeout_ms > 0 ? mono_ns() + (uint64_t)opts->timeout_ms * 1000000u : 0;
        for (;;) {
                c->fd = cvc_open_stream(addr, c->err, sizeof(c->err));
                if (c->fd >= 0)
                        break;
                bool again = opts->retry_connect ? opts->retry_connect(c->fd, opts->ud)
                                                 : c->fd == -ECONNREFUSED;
                if (!again || !opts->still_alive || !opts->still_alive(opts->ud) ||
                    (deadline && mono_ns() >= deadline))
                        break;
                struct timespec pause = {.tv_nsec = 10000000};
                nanosleep(&pause, NULL);
        }
        if (c->fd < 0)
                return c->fd;
        /* HELLO gets what is left of the deadline, not a fresh timeout. */
        struct cvc_connect_opts rest = *opts;
        if (deadline) {
                uint64_t now = mono_ns();
                rest.timeout_ms = now >= deadline ? 1 : (int)((deadline - now) / 1000000u) + 1;
        }
        return hello_with_retry(c, &rest);
}

int cvc_connect_fd(int fd, const struct cvc_connect_opts *opts, struct cvc **out)
{
        struct cvc *c = new_cvc();
        if (!c) {
                close(fd);
                return -ENOMEM;
        }
        *out = c;
        c->fd = fd;
        return hello_with_retry(c, opts ? opts : &plain_opts);
}

int cvc_rehello(struct cvc *c, int timeout_ms)
{
        struct cv_buf b;
        cv_buf_init(&b);
        int rc = encode_hello(&b);
        cbor_item_t *reply = NULL;
        if (rc < 0)
                rc = cvc_fail(c, rc, "encode HELLO: %s", strerror(-rc));
        else
                rc = cvc_call_timeout(c, CV_MSG_HELLO, cv_buf_head(&b), cv_buf_pending(&b),
                                      timeout_ms, &reply);
        cv_buf_free(&b);
        if (rc == 0) {
                if (c->hello)
                        cbor_decref(&c->hello);
                c->hello = reply;
        }
        return rc;
}

int cvc_connect(const char *addr, struct cvc **out)
{
        return cvc_connect_ex(addr, NULL, out);
}

void cvc_close(struct cvc *c)
{
        if (!c)
                return;
        if (c->fd >= 0)
                close(c->fd);
        cv_reader_free(&c->reader);
        cv_buf_free(&c->out);
        if (c->hello)
                cbor_decref(&c->hello);
        free(c);
}

int cvc_ping(struct cvc *c, uint64_t *rtt_ns)
{
        uint64_t t0 = mono_ns();
        int rc = cvc_call(c, CV_MSG_PING, NULL, 0, NULL);
        if (rc == 0 && rtt_ns)
                *rtt_ns = mono_ns() - t0;
        return rc;
}

static int encode_execute(struct cv_buf *b, const struct cvc_exec_opts *o)
{
        size_t nenv = 0;
        for (const char *const *e = o->envs; e && *e; e++)
                nenv++;
        cv_enc_map(b, 1 + (o->context != NULL) + (nenv > 0) + (o->timeout_ms > 0));
        cv_enc_cstr(b, "code");
        cv_enc_cstr(b, o->code);
        if (o->context) {
                cv_enc_cstr(b, "context");
                cv_enc_cstr(b, o->context);
        }
        if (nenv) {
                cv_enc_cstr(b, "envs");
                cv_enc_map(b, nenv);
                for (const char *const *e = o->envs; *e; e++) {
                        const char *eq = strchr(*e, '=');
                        if (!eq || eq == *e)
                                return -EINVAL;
                        cv_enc_text(b, *e, (size_t)(eq - *e));
                        cv_enc_cstr(b, eq + 1);
                }
        }
        if (o->timeout_ms) {
                cv_enc_cstr(b, "timeout_ms");
                cv_enc_uint(b, o->timeout_ms);
        }
        return b->err;
}

/* Sends INTERRUPT for the execution's context; its own terminal reply is skipped. */
static int send_interrupt(struct cvc *c, const char *context)
{
        struct cv_buf b;
        cv_buf_init(&b);
        cv_enc_map(&b, context ? 1 : 0);
        if (context) {
                cv_enc_cstr(&b, "context");
                cv_enc_cstr(&b, context);
        }
        int rc = b.err ? b.err
                       : cvc_send(c, CV_MSG_INTERRUPT, cvc_new_id(c), cv_buf_head(&b),
                                  cv_buf_pending(&b));
        cv_buf_free(&b);
        return rc;
}

static int send_cancel(struct cvc *c, uint32_t target)
{
        struct cv_buf b;
        cv_buf_init(&b);
        cv_enc_map(&b, 1);
        cv_enc_cstr(&b, "id");
        cv_enc_uint(&b, target);
        int rc =
            b.err ? b.err
                  : cvc_send(c, CV_MSG_CANCEL, cvc_new_id(c), cv_buf_head(&b), cv_buf_pending(&b));
        cv_buf_free(&b);
        return rc;
}

int cvc_execute(struct cvc *c, const struct cvc_exec_opts *opts, cvc_event_fn on_event, void *ud,
                struct cvc_exec_status *st)
{
        memset(st, 0, sizeof(*st));
        struct cv_buf b;
        cv_buf_init(&b);
        int rc = encode_execute(&b, opts);
        if (rc < 0) {
                cv_buf_free(&b);
                return cvc_fail(c, rc, "encode EXECUTE: %s",
                                rc == -EINVAL ? "env entries must be KEY=VALUE" : strerror(-rc));
        }
        uint32_t id = cvc_new_id(c);
        rc = cvc_send(c, CV_MSG_EXECUTE, id, cv_buf_head(&b), cv_buf_pending(&b));
        cv_buf_free(&b);
        if (rc < 0)
                return rc;
        bool interrupted = false, cancelled = false;
        for (;;) {
                if (opts->interrupt && *opts->interrupt && !interrupted) {
                        interrupted = true;
                        rc = send_interrupt(c, opts->context);
                        if (rc < 0)
                                return rc;
                }
                struct cvc_event ev;
                rc = cvc_next_event(c, opts->interrupt ? 100 : -1, &ev);
                if (rc < 0)
                        return rc;
                if (rc == 0)
                        continue;
                if (ev.id != id) {
                        cvc_event_free(&ev); /* the INTERRUPT's / CANCEL's own reply */
                        continue;
                }
                if (ev.type == CV_MSG_OK) {
                        const char *s;
                        size_t len;
                        if (cv_map_get_str(ev.root, "status", &s, &len) == 0)
                                st->error = len == 5 && memcmp(s, "error", 5) == 0;
                        (void)cv_map_get_uint(ev.root, "execution_count", &st->execution_count);
                        cvc_event_free(&ev);
                        return 0;
                }
                if (ev.type == CV_MSG_ERROR) {
                        if (ev.u.fail.code_len == 7 && memcmp(ev.u.fail.code, "timeout", 7) == 0) {
                                st->timed_out = true;
                                cvc_event_free(&ev);
                                return 0;
                        }
                        rc = cvc_remote_error(c, &ev);
                        cvc_event_free(&ev);
                        return rc;
                }
                if (ev.type == CV_MSG_EXEC_ERROR)
                        st->error = true;
                if (ev.type == CV_MSG_RESULT)
                        st->execution_count = ev.u.display.execution_count;
                if (on_event && on_event(&ev, ud) != 0 && !cancelled) {
                        cancelled = true;
                        rc = send_cancel(c, id);
                        if (rc < 0) {
                                cvc_event_free(&ev);
                                return rc;
                        }
                }
                cvc_event_free(&ev);
        }
}
